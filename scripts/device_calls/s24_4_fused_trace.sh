#!/usr/bin/env bash
# Twenty-fourth session: the fused backward's timeline (one CTA, clock64 stamps at every barrier operation,
# benchmarks/fused_bwd_check.py --trace) at (32, 32) 8192x4 and 1024x8.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 200 python3 benchmarks/fused_bwd_check.py --heads 32 \
  --mixes 8192x4 1024x8 --trace > "$OUT/fused_trace.log" 2>&1
echo "trace rc=$?"; grep -v "TileLang\|^$" "$OUT/fused_trace.log" | tail -170
