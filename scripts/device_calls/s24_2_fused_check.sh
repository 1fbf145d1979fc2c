#!/usr/bin/env bash
# Twenty-fourth session: the fused backward's first run (JIT, no wheel): its outputs against the pair it replaces
# (state-gradient pass + gmax 1 chunk gradient) and both times, at (16, 16) and (32, 32). Then compute-sanitizer's
# racecheck and synccheck over one small run of the fused kernel.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 300 python3 benchmarks/fused_bwd_check.py --heads 16 32 \
  --mixes 8192x4 1024x8 1x8192 1000+3000+77+4000 > "$OUT/fused_check.log" 2>&1
echo "fused check rc=$?"; grep -v "TileLang\|^$" "$OUT/fused_check.log" | tail -25
