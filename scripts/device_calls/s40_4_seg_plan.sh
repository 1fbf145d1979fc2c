#!/usr/bin/env bash
# Fortieth session: the segment plan by one warp per (slot, v-head) (70064b0's seg_plan.py). Its tables against the
# sequential plan (tests/test_seg_plan_gpu.py, TileLang's JIT from the carried peers) and the context-parallel and
# fused-group GPU tests on the new wheel; flashqla alone, the dcb2abd wheel (one thread per slot and v-head) against the
# new one and again, backward and forward at (4, 8) and (2, 4); then the new backward's timeline (profile_bwd_peers.py).
# Needs .carry/flashqla-*.whl (the new wheel), .carry/ab/dcb2abd.zip and .carry/peers.tar.xz.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
install_ab_wheel dcb2abd
install_peers
t0=$(date +%s)
PYTHONPATH=/tmp/site:/tmp/peers PYTHONUNBUFFERED=1 TILELANG_CACHE_DIR=/tmp/tl_cache timeout 150 python3 -m pytest \
  tests/test_seg_plan_gpu.py -q -rfs -p no:cacheprovider > "$OUT/pytest_seg_plan.log" 2>&1
echo "pytest seg_plan rc=$? $(( $(date +%s) - t0 )) s"; grep -h "^FAILED\|^SKIPPED\|^E  " "$OUT/pytest_seg_plan.log" \
  | head -8 | cut -c1-200; tail -1 "$OUT/pytest_seg_plan.log"
run_pytest "$OUT/pytest_cp.log" 150 gpu tests/test_cp_gpu.py tests/test_fused_groups_gpu.py
MIXES="1x8192 4096+4096 1x32768 8192x4"
AB_TIMEOUT=60 ab_runs bwd "4,8 2,4" "$MIXES" old=/tmp/site_dcb2abd new=/tmp/site old2=/tmp/site_dcb2abd
AB_TIMEOUT=60 ab_runs fwd "4,8 2,4" "$MIXES" old=/tmp/site_dcb2abd new=/tmp/site old2=/tmp/site_dcb2abd
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 60 python3 benchmarks/profile_bwd_peers.py --heads 4,8 2,4 \
  --mixes 1x8192 1x32768 --libs flashqla --timeline 2>&1 | grep -v "Warning\|warn" | cut -c1-130
