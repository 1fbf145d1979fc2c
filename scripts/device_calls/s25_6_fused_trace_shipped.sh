#!/usr/bin/env bash
# Twenty-fifth session, last device time: the timeline of the shipped fused backward (dl_in_wk and hold_gamma, the
# factory's defaults; benchmarks/fused_bwd_check.py --trace: clock64 stamps at every barrier operation of the first
# CTA) at (32, 32) 8192x4, for the next session's work on its period (docs/speed_plan.md, Ready 2).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 150 python3 benchmarks/fused_bwd_check.py --heads 32 \
  --mixes 8192x4 --trace --params "{}" > "$OUT/fused_shipped_trace.log" 2>&1
echo "trace rc=$?"; grep -v "TileLang\|^$" "$OUT/fused_shipped_trace.log" | grep -v "WP[123]" | tail -100 | cut -c1-90
