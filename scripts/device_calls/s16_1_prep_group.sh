#!/usr/bin/env bash
# One GPU: the chunk prep per (slot, qk-head, block of v-heads) against the per-v-head prep (ablate.py, JIT).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
for t in 8192 32768; do
  PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 240 python3 benchmarks/ablate.py --kernels prep prepg1 prepg2 prepg4 \
    --variants cur --heads 2,8 4,16 16,32 16,64 32,32 16,48 --tokens $t > "$OUT/prep_$t.log" 2>&1
  echo "rc=$?" >> "$OUT/prep_$t.log"
done
grep -h "^prep\|rc=" "$OUT"/prep_*.log | cut -c1-200
