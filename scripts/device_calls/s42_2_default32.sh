#!/usr/bin/env bash
# Forty-second session: the wheel with the 32-wide walk by default (0c2d7f3): every GPU test, then flashqla alone with
# the default, FLASHQLA_WALK_BV=64 (the former default) and the default again, backward and forward at (2, 4), (4, 8) x
# 1x32768, 8192x4. Needs .carry/flashqla-*.whl. About 4 minutes.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
run_pytest "$OUT/pytest_all.log" 240 gpu tests
S=/tmp/site
for mode in bwd fwd; do
  AB_TIMEOUT=40 ab_runs $mode "2,4 4,8" "1x32768 8192x4" w32=$S w64=$S:FLASHQLA_WALK_BV=64 w32again=$S
done
