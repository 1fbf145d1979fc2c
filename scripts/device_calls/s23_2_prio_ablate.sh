#!/usr/bin/env bash
# Twenty-third session, second call: the chunk gradient's load order (prio_loads won 9-11% at one v-head per group in
# the first call) with V's load after Q and K too (prio_v) and each later load after its predecessor's arrival
# (chain_loads), with the default register split and the small-group variant's, at one to four v-heads per group;
# ablate.py JIT (peer bundle's TileLang), interleaved rounds, 16384 tokens. About 150 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 400 python3 benchmarks/ablate.py --rounds 5 \
  --kernels bwdcwsb bwdcwspl bwdcwsplv bwdcwsplc bwdcwsplvc bwdcwsr2 bwdcwsr2pl bwdcwsr2plvc --variants cur \
  --tokens 16384 --heads 16,16 32,32 16,32 8,24 16,48 16,64 2,8 > "$OUT/ablate_prio.log" 2>&1
echo "ablate prio rc=$?"; grep -A60 "^kernel " "$OUT/ablate_prio.log" | cut -c1-100
