#!/usr/bin/env bash
# One GPU, a611c11's wheel (the refit segment model; HEAD's plans): the forced-plan sweep of s21_2 at the benchmark's
# several-sequence mixes (s21_2 had only 2048x4 and 4096x4, and the refit made the (2, 8) 8192x4 training step 4%
# slower in s21_3's A/B), 9 head configurations x 7 mixes; the automatic row is the refit's choice.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 420 python3 benchmarks/cp_sweep.py \
  --heads 32,32 16,16 8,24 2,8 4,16 16,64 16,32 8,32 16,48 \
  --mixes 8192x4 4096x8 1024x8 16384+16384 28672+4096 8192+24576 12288+4096 \
  --cp -1 0 4 8 16 32 64 128 > "$OUT/cp_sweep_multi.log" 2>&1
echo "cp sweep rc=$?"; python3 scripts/device_calls/cp_sweep_summary.py "$OUT/cp_sweep_multi.log"
