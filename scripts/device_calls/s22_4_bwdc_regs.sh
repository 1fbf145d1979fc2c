#!/usr/bin/env bash
# One GPU: the chunk gradient's register splits with the producer warps above 24 registers, and tma_dv, at groups 1-4
# (s22_3 found 240 / 224 / 40 and tma_dv 3-7% faster at one v-head per group), JIT-compiled by ablate.py from this
# tree; the default spec twice (first and last) for the run's noise.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 400 python3 benchmarks/ablate.py \
  --kernels bwdcws bwdcwsr2 bwdcwsr4 bwdcwsr5 bwdcwsr6 bwdcwst bwdcwsr2t bwdcwsr4t bwdcwsb \
  --variants cur --tokens 16384 --heads 16,16 32,32 16,32 8,24 16,64 2,8 > "$OUT/ablate_regs.log" 2>&1
echo "ablate rc=$?"
grep -A60 "^kernel " "$OUT/ablate_regs.log" | cut -c1-110
