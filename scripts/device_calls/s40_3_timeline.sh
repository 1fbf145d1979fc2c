#!/usr/bin/env bash
# Fortieth session: one flashqla backward's kernels in launch order (benchmarks/profile_bwd_peers.py --timeline) at
# (4, 8) 1x8192 and (2, 4) 1x32768, with the side stream and with FLASHQLA_SINGLE_STREAM=1 (each kernel's own time):
# which chain sets the backward's time before the fused kernel. Needs .carry/flashqla-*.whl. Not run: its two
# attempts found no machine; s40_4_seg_plan.sh ran the same timeline (without the single-stream half).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
for ss in 0 1; do
  echo "=== FLASHQLA_SINGLE_STREAM=$ss"
  FLASHQLA_SINGLE_STREAM=$ss PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 100 python3 \
    benchmarks/profile_bwd_peers.py --heads 4,8 2,4 --mixes 1x8192 1x32768 --libs flashqla --timeline 2>&1 \
    | grep -v "Warning\|warn" | cut -c1-130
done
