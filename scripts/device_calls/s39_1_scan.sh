#!/usr/bin/env bash
# Thirty-ninth session: s38_3_cp_scan.sh cut to fit what device time was left (about 350 s): the scan
# (FLASHQLA_CP_SCAN=1; its complete maps no longer copied on each round, a7c2e6a) smoke-run, its GPU tests against the
# walk and float64, then flashqla alone with the walk and the scan (the walk's segment plans in this wheel): the
# backward at the published backward heads, the forward at few heads, and the scan at forced segment lengths (the
# data for pricing the scan per round in the segment model). Needs .carry/flashqla-*.whl of dcb2abd or later.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
nvidia-smi --query-gpu=name --format=csv,noheader
FLASHQLA_CP_SCAN=1 PYTHONPATH=/tmp/site timeout 60 python3 scripts/device_calls/scan_smoke.py
rc=$?
echo "smoke rc=$rc"
[ $rc -eq 0 ] || exit 1
run_pytest "$OUT/pytest_scan.log" 120 gpu tests/test_cp_scan_gpu.py
echo "elapsed ${SECONDS} s"
WALK=/tmp/site:FLASHQLA_CP_SCAN=0
SCAN=/tmp/site:FLASHQLA_CP_SCAN=1
AB_TIMEOUT=50 ab_runs bwd "2,4 4,8 8,16" "1x32768 1x8192 16384+16384 8192x4" walk_bwd=$WALK scan_bwd=$SCAN
echo "elapsed ${SECONDS} s"
AB_TIMEOUT=40 ab_runs fwd "2,4 4,8 2,8" "1x32768 1x8192 16384+16384" walk=$WALK scan=$SCAN
echo "elapsed ${SECONDS} s"
FLASHQLA_CP_SCAN=1 PYTHONPATH=/tmp/site timeout 90 python3 benchmarks/cp_sweep.py --hint --no-wide --heads 2,4 4,8 \
  --mixes 1x32768 1x8192 --cp -1 4 8 16 32 64 > "$OUT/cp_sweep_scan.log" 2>&1
echo "cp_sweep (scan) rc=$?"; grep -v "^$\|Warning" "$OUT/cp_sweep_scan.log" | tail -16
echo "elapsed ${SECONDS} s"
