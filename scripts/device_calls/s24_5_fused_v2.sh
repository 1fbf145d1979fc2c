#!/usr/bin/env bash
# Twenty-fourth session: the fused backward's second layout (WS takes the stores and the dg tail): outputs and times
# against the pair, then its timeline at (32, 32) 8192x4.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 220 python3 benchmarks/fused_bwd_check.py --heads 32 16 \
  --mixes 8192x4 1024x8 1000+3000+77+4000 > "$OUT/fused_v2.log" 2>&1
echo "check rc=$?"; grep -v "TileLang\|^$" "$OUT/fused_v2.log" | tail -8
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 150 python3 benchmarks/fused_bwd_check.py --heads 32 \
  --mixes 8192x4 --trace > "$OUT/fused_v2_trace.log" 2>&1
echo "trace rc=$?"; grep -v "TileLang\|^$" "$OUT/fused_v2_trace.log" | grep -v "WP[123]" | tail -80
