#!/usr/bin/env bash
# Thirty-fifth session, the device budget nearly spent on machine starts that failed: s35_4 at (32, 32) only, 3 rounds (the
# fused backward's dq_fold and register splits, JIT) then the shortest form of s35_3 (math_pair's wheel against the shipped one:
# outputs bit for bit, then the op's forward at (32, 32), base / pair / base again). Carry .carry/ab and
# .carry/peers.tar.xz. About 250 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 150 python3 benchmarks/fused_bwd_check.py --heads 32 \
  --mixes 8192x4 1024x8 --rounds 3 --params "dict(row_pad=8)" "dict(row_pad=8, dq_fold=True)" \
  "dict(row_pad=8, dq_fold=True, regs=(160, 168, 160, 24))" "dict(row_pad=8, dq_fold=True, regs=(152, 176, 160, 24))" \
  > "$OUT/dq_fold.log" 2>&1
echo "fused check rc=$?"; grep -v "TileLang\|^$" "$OUT/dq_fold.log" | tail -13
. scripts/device_calls/common.sh
install_ab_wheel 56d3a2f
install_ab_wheel d924ea0
for c in 56d3a2f d924ea0; do
  PYTHONPATH=/tmp/site_$c timeout 45 python3 scripts/device_calls/op_outputs.py save "$OUT/out_$c.pt" \
    --heads 32,32 --mixes 8192x4 2048x4 1x8192 > "$OUT/out_$c.log" 2>&1
  echo "save $c rc=$?"; tail -1 "$OUT/out_$c.log"
done
python3 scripts/device_calls/op_outputs.py compare "$OUT/out_56d3a2f.pt" "$OUT/out_d924ea0.pt"
AB_TIMEOUT=60 ab_runs fwd "32,32" "8192x4 4096x8 2048x4 1024x8 1x8192" base=/tmp/site_56d3a2f \
  pair=/tmp/site_d924ea0 base_again=/tmp/site_56d3a2f
