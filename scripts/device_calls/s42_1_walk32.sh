#!/usr/bin/env bash
# Forty-second session: s41_4 trimmed to the budget left (about 13 minutes of device time; the forty-first session's
# machine was shut down mid-call). One wheel (16d624a's code: fallback_first on, the walk fenced, the 32-wide walk
# and the fork after the tables built in as options): its CP, stream and backward GPU tests, then flashqla alone with
# the defaults (new), with the 32-wide walk (FLASHQLA_WALK_BV=32), with the fork after the tables
# (FLASHQLA_BWD_FORK_AFTER_TABLES=1), with both, and the defaults again (the run's drift); backward at (4, 8), (2, 4),
# (8, 16), (16, 32), forward at the first three. Needs .carry/flashqla-*.whl. About 4 minutes.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
run_pytest "$OUT/pytest.log" 200 gpu tests/test_cp_gpu.py tests/test_streams_gpu.py \
  tests/test_gdn_bwd_gpu.py tests/test_fused_groups_gpu.py tests/test_build_manifest.py
S=/tmp/site
MIXES="1x8192 4096+4096 1x32768 8192x4"
AB_TIMEOUT=60 ab_runs bwd "4,8 2,4 8,16 16,32" "$MIXES" new=$S w32=$S:FLASHQLA_WALK_BV=32 \
  tables=$S:FLASHQLA_BWD_FORK_AFTER_TABLES=1 both=$S:FLASHQLA_WALK_BV=32,FLASHQLA_BWD_FORK_AFTER_TABLES=1 new2=$S
AB_TIMEOUT=60 ab_runs fwd "4,8 2,4 8,16" "$MIXES" new=$S w32=$S:FLASHQLA_WALK_BV=32 new2=$S
