#!/usr/bin/env bash
# (Written in the twenty-fifth session for the next one; not yet run.) The fused backward's period: the option
# dq_after_da (off: WA forms E and dA before staging dq, against the shipped timeline's mutual wait of the consumers,
# docs/fused_bwd_plan.md "The period, read again"). The default's lowered code is ccfd14f's, byte for byte.
#   1. benchmarks/fused_bwd_check.py (JIT, the peers bundle's TileLang): the pair against the default and
#      dq_after_da (outputs compared with the pair's, times) at (32, 32) and (16, 16), 8192x4 and 1024x8;
#   2. dq_after_da's timeline at (32, 32) 8192x4 (is WK now waiting for its next K?).
# About 300 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 240 python3 benchmarks/fused_bwd_check.py --heads 32 16 \
  --mixes 8192x4 1024x8 --params "{}" "dict(dq_after_da=True)" > "$OUT/period_check.log" 2>&1
echo "check rc=$?"; grep -v "TileLang\|^$" "$OUT/period_check.log" | tail -16
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 120 python3 benchmarks/fused_bwd_check.py --heads 32 \
  --mixes 8192x4 --trace --params "dict(dq_after_da=True)" > "$OUT/period_trace.log" 2>&1
echo "trace rc=$?"; grep -v "TileLang\|^$" "$OUT/period_trace.log" | grep -v "WP[123]" | tail -80 | cut -c1-90
