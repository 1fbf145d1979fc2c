#!/usr/bin/env bash
# Twenty-third session, fifth call. One GPU. The gmax 1 variant (prio_loads) with the options that might move its
# CTA's end or first steps (join=False, tma_dv, a 248 / 224 / 32 split, wa_async), ablate.py interleaved at one v-head
# per group; then e7e645b's training step with the peers at (16, 16), every mix.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 150 python3 benchmarks/ablate.py --rounds 5 \
  --kernels bwdcwspl bwdcwsplnj bwdcwsplt bwdcwsplr4 bwdcwsply --variants cur \
  --tokens 16384 --heads 16,16 32,32 > "$OUT/ablate_g1.log" 2>&1
echo "ablate rc=$?"; grep -A12 "^kernel " "$OUT/ablate_g1.log" | cut -c1-100
peer_table fwdbwd 16,16 360
