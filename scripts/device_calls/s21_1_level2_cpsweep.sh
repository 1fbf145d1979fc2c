#!/usr/bin/env bash
# One GPU, a1bdf84's wheel (HEAD's defaults). (1) The prep's level-2 merge on per-warp TF32 mma.sync (spec prep4l2,
# option mma_level2) against the default at 32768 tokens, and the inverse's latency on a lone warpgroup with it
# (prep16 / prep16l2, masks 0 120 127). (2) The segment model against forced segment lengths at short and mid-length
# sequences (the forward and training-step losses at 1x4096 against FlashQLA): benchmarks/cp_sweep.py.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 120 python3 benchmarks/ablate.py --kernels prep prep4l2 --variants cur \
  --tokens 32768 --heads 2,8 16,16 16,32 16,64 > "$OUT/ablate_prep_l2.log" 2>&1
echo "prep l2 rc=$?"; grep -A9 "^kernel " "$OUT/ablate_prep_l2.log" | cut -c1-150
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 100 python3 benchmarks/ablate.py --kernels prep16 prep16l2 \
  --variants ablate --heads 1,16 --tokens 8448 --masks 0 120 127 > "$OUT/ablate_inverse16.log" 2>&1
echo "inverse rc=$?"; grep "^prep16" "$OUT/ablate_inverse16.log" | cut -c1-110
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 240 python3 benchmarks/cp_sweep.py \
  --heads 32,32 16,16 8,24 2,8 4,16 16,64 --mixes 1x2048 1x4096 1x8192 1x16384 2048x4 4096x4 \
  --cp -1 0 4 8 16 32 64 > "$OUT/cp_sweep.log" 2>&1
echo "cp sweep rc=$?"; python3 scripts/device_calls/cp_sweep_summary.py "$OUT/cp_sweep.log"
