#!/usr/bin/env bash
# Twenty-fourth session: the fused backward with dL / dKs moved from WA to WK (dl_in_wk), with and without Gamma held,
# against the pair and the second layout; then dl_in_wk's timeline at (32, 32) 8192x4.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 240 python3 benchmarks/fused_bwd_check.py --heads 32 16 \
  --mixes 8192x4 1024x8 --params "{}" "dict(dl_in_wk=True)" "dict(dl_in_wk=True, hold_gamma=True)" \
  > "$OUT/fused_dl.log" 2>&1
echo "check rc=$?"; grep -v "TileLang\|^$" "$OUT/fused_dl.log" | tail -16
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 150 python3 benchmarks/fused_bwd_check.py --heads 32 \
  --mixes 8192x4 --trace --params "dict(dl_in_wk=True)" > "$OUT/fused_dl_trace.log" 2>&1
echo "trace rc=$?"; grep -v "TileLang\|^$" "$OUT/fused_dl_trace.log" | grep -v "WP[123]" | tail -90 | cut -c1-90
