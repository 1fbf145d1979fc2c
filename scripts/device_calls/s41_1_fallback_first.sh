#!/usr/bin/env bash
# Written in the fortieth session for the next: the warm-up pass's transition rows first (fallback_first, gdn_fwd.py
# and gdn_bwd_dh.py) and the walk's step variants. The ff wheel's context-parallel and backward GPU tests; flashqla
# alone, the default wheel against the ff wheel and again, backward and forward at (4, 8), (2, 4), (8, 16). The walk's
# step variants and the backward's graph-replay timeline are the next call (s40_6_walk.sh, about 3 minutes): both
# in one call would come near the 600 s limit.
# Needs .carry/flashqla-*.whl (HEAD's default), .carry/ab/ff.zip (build_option_wheel.sh ff ..., as its header
# shows). About 5 minutes.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
install_ab_wheel ff
PYTEST_SITE=/tmp/site_ff run_pytest "$OUT/pytest_ff.log" 200 gpu tests/test_cp_gpu.py tests/test_gdn_bwd_gpu.py \
  tests/test_fused_groups_gpu.py
MIXES="1x8192 4096+4096 1x32768 8192x4"
AB_TIMEOUT=60 ab_runs bwd "4,8 2,4 8,16" "$MIXES" base=/tmp/site ff=/tmp/site_ff base2=/tmp/site
AB_TIMEOUT=60 ab_runs fwd "4,8 2,4 8,16" "$MIXES" base=/tmp/site ff=/tmp/site_ff base2=/tmp/site
