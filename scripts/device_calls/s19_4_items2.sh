#!/usr/bin/env bash
# (A record: the `items` option and its ablate specs bwdcwsi2 / i4 / i8 were removed after this run; they are at f8c2ddc.)
# One GPU: the chunk gradient's items walk after s19_3 (whose divisions by the runtime group made it 1.1-1.5x slower):
# ablate.py, the default against items = 4 / 8, every output compared, 8192 tokens, five head configurations.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 230 python3 benchmarks/ablate.py --kernels bwdcws bwdcwsi4 bwdcwsi8 \
  --variants cur --heads 16,16 32,32 16,32 2,8 16,64 > "$OUT/ablate_items.log" 2>&1
echo "ablate rc=$?"; grep -A30 "^kernel " "$OUT/ablate_items.log" | cut -c1-150
