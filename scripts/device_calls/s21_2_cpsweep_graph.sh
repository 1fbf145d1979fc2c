#!/usr/bin/env bash
# One GPU, a1bdf84's wheel (HEAD's defaults): the segment model against forced segment lengths and forward V widths,
# timed as bench_gdn.py times (CUDA-graph replays; s21_1's sweep timed host-launched calls, host-bound below about
# 0.3 ms), at 8 head configurations x 7 mixes.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 420 python3 benchmarks/cp_sweep.py \
  --heads 32,32 16,16 8,24 2,8 4,16 16,64 16,32 8,32 --mixes 1x2048 1x4096 1x8192 1x16384 1x32768 2048x4 4096x4 \
  --cp -1 0 4 8 16 32 64 128 > "$OUT/cp_sweep.log" 2>&1
echo "cp sweep rc=$?"; python3 scripts/device_calls/cp_sweep_summary.py "$OUT/cp_sweep.log"
