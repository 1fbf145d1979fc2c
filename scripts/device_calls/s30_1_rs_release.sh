#!/usr/bin/env bash
# Thirtieth session, call 2 (call 1 was s29_3: the register-operand forward 1.19-1.35x slower per chunk than the
# default kernels on an H100). Whether the ring's late release starves it: ablate.py's kernel times per chunk, the
# default kernels of each width against the register-operand forward as in call 1, with the ring's K, V, A and gates
# freed once W^T is formed (er), and with Z formed by X's warpgroup too (erz). Needs the peers bundle's TileLang
# (.carry/peers.tar.xz); about 150 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 400 python3 benchmarks/ablate.py --kernels fwd128thzr fwdrs128 \
  fwdrs128er fwdrs128erz fwd_soth fwdrs64 fwdrs64er fwdrs64erz --variants cur --heads 32,32 128,128 --tokens 8192 \
  --rounds 5 > "$OUT/ablate_rs_release.log" 2>&1
echo "ablate rc=$?"; grep -v "TileLang\|^$" "$OUT/ablate_rs_release.log" | tail -22 | cut -c1-160
