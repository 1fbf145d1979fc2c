#!/usr/bin/env bash
# Thirty-fifth session: the fused backward's dq_fold (dQ's state part formed first in dQ's own accumulator, dP K
# accumulated onto it: WA's second 64 x 128 fp32 accumulator gone; nvcc 13.0: WA's main loop 84 spill reloads and 39
# spill stores per chunk -> 0 and 0, the kernel's spill loads 1004 -> 668 bytes) against the shipped parameters
# (row_pad 8), and with WA's registers moved to WK (WA's / WK's spill reloads and stores per chunk in its main loop:
# shipped 84 / 39 and 54 / 43; dq_fold 0 / 0 and 54 / 43; at 160 / 168 5 / 5 and 36 / 26; at 152 / 176 10 / 10 and
# 27 / 18): fused_bwd_check.py (JIT with the peers bundle's TileLang), outputs against the two-pass pair, medians of
# interleaved rounds. About 200 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 280 python3 benchmarks/fused_bwd_check.py --heads 32 16 \
  --mixes 8192x4 1024x8 --params "dict(row_pad=8)" "dict(row_pad=8, dq_fold=True)" \
  "dict(row_pad=8, dq_fold=True, regs=(160, 168, 160, 24))" "dict(row_pad=8, dq_fold=True, regs=(152, 176, 160, 24))" > "$OUT/dq_fold.log" 2>&1
echo "fused check rc=$?"; grep -v "TileLang\|^$" "$OUT/dq_fold.log" | tail -19
