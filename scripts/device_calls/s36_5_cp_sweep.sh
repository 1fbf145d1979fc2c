#!/usr/bin/env bash
# Thirty-sixth session: where FlashQLA ties or leads the forward at (32, 32) (one sequence of 2k-8k tokens, two equal
# sequences), the segment plan's automatic choice (-1) against forced segment lengths, forward and backward, on the
# carried wheel (benchmarks/cp_sweep.py; the model's V width only). About 200 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 240 python3 benchmarks/cp_sweep.py --no-wide --hint \
  --heads 32,32 --mixes 1x2048 1x8192 4096+4096 16384+16384 1x32768 \
  --cp -1 0 2 4 8 16 32 > "$OUT/cp_sweep.log" 2>&1
echo "cp_sweep rc=$?"; grep -v "^$" "$OUT/cp_sweep.log" | cut -c1-100 | tail -60
# where the training step's time goes at (32, 32) (the fused backward on): kernels by GPU time
profile_step 1 "32,32" "8192x4 1x32768" 60
