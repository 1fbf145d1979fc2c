#!/usr/bin/env bash
# Written in the 38th session, not run there (no device time left): the correction as a log-depth scan
# (FLASHQLA_CP_SCAN=1, tilelang_src/sm90/cp_scan.py) on the GPU, most wanted first: a smoke run (a hang or an error
# stops the call), its tests against the walk and float64, then flashqla alone with the setting 0 / 1 / 0 at few heads
# (forward and training step), then the kernels of a (2, 4) step with it on and its forced segment lengths. Needs
# .carry/flashqla-*.whl of the commit that added the scan or later. About 400 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
nvidia-smi --query-gpu=name --format=csv,noheader
FLASHQLA_CP_SCAN=1 PYTHONPATH=/tmp/site timeout 90 python3 scripts/device_calls/scan_smoke.py
rc=$?
echo "smoke rc=$rc"
[ $rc -eq 0 ] || exit 1
run_pytest "$OUT/pytest_scan.log" 150 gpu tests/test_cp_scan_gpu.py tests/test_cp_gpu.py
WALK=/tmp/site:FLASHQLA_CP_SCAN=0
SCAN=/tmp/site:FLASHQLA_CP_SCAN=1
ab_runs fwd "2,4 4,8 2,8" "1x32768 1x8192 16384+16384" walk=$WALK scan=$SCAN walk_again=$WALK
ab_runs fwdbwd "2,4 4,8 2,8" "1x32768 1x8192 16384+16384" walk_step=$WALK scan_step=$SCAN walk_step_again=$WALK
# the backward alone at the published backward heads (issue 5's shapes; 39th session)
ab_runs bwd "2,4 4,8 8,16" "1x32768 1x8192 16384+16384 8192x4" walk_bwd=$WALK scan_bwd=$SCAN walk_bwd_again=$WALK
echo "elapsed ${SECONDS} s"
FLASHQLA_CP_SCAN=1 profile_step 1 "2,4" "1x8192 1x32768" 40
# the segment lengths with the scan (shorter segments cost a round, not a step, each: the model's refit)
FLASHQLA_CP_SCAN=1 PYTHONPATH=/tmp/site timeout 100 python3 benchmarks/cp_sweep.py --hint --no-wide --heads 2,4 4,8 \
  --mixes 1x32768 1x8192 --cp -1 4 8 16 32 > "$OUT/cp_sweep_scan.log" 2>&1
echo "cp_sweep (scan) rc=$?"; grep -v "^$\|Warning" "$OUT/cp_sweep_scan.log" | tail -24
