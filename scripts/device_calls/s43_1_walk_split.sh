#!/usr/bin/env bash
# For the session after the forty-second: FLASHQLA_WALK_SPLIT_M=1 (the warm-up passes store the transition matrices
# split into bf16 halves, the 32-wide walk loads them by TMA: no split of M per step), written and lowered in the 42nd
# session, never run. Its GPU tests (tests/test_walk_split_gpu.py: the same bits as the default in the forward, the
# prefill and the backward; the kernel runs only where asked; the bad value) with the CP tests beside them, then
# flashqla alone: the default, split, and the default again, backward at (4, 8), (2, 4), (8, 16), forward at the
# same and (2, 8); then ablate.py's bwddhab (TileLang's JIT from the carried peers): the state gradient's time per chunk
# without the products a transition row does for nothing (docs/speed_plan.md item 0). Needs .carry/flashqla-*.whl built
# from a commit with split_m and .carry/peers.tar.xz. About 6 minutes.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
run_pytest "$OUT/pytest_split.log" 200 gpu tests/test_walk_split_gpu.py tests/test_cp_gpu.py tests/test_cp_scan_gpu.py \
  tests/test_prefill_gpu.py tests/test_build_manifest.py
S=/tmp/site
MIXES="1x8192 4096+4096 1x32768 8192x4"
AB_TIMEOUT=60 ab_runs bwd "4,8 2,4 8,16" "$MIXES" base=$S split=$S:FLASHQLA_WALK_SPLIT_M=1 base2=$S
AB_TIMEOUT=60 ab_runs fwd "4,8 2,4 8,16 2,8" "$MIXES" base=$S split=$S:FLASHQLA_WALK_SPLIT_M=1 base2=$S
install_peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 240 python3 benchmarks/ablate.py --kernels bwddhab --variants cur ablate \
  --masks 0 1 2 4 8 15 --heads 2,4 4,8 16,32 > "$OUT/ablate_bwddh.log" 2>&1
echo "ablate bwddhab rc=$?"
grep -v "Warning\|warn\|^$" "$OUT/ablate_bwddh.log" | tail -30 | cut -c1-160
