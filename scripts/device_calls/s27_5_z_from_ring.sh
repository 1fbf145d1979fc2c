#!/usr/bin/env bash
# Twenty-seventh session, call 5: z_from_ring (WG2 reads Z for O += Z W from the ring's stage, no copy to z_s) against
# the shipped forward at BV = 128 and BV = 64 (o stored), ablate.py interleaved, one sequence of 8192 tokens at
# (32, 32) (32 or 64 CTAs) and (128, 128) (128 or 256 CTAs, the HBM-bound regime of four 8192-token sequences at 32
# heads). JIT with the peers bundle's TileLang. About 200 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 280 python3 benchmarks/ablate.py --kernels fwd128th fwd128thzr \
  fwd_soth fwd_sothzr --variants cur --heads 32,32 128,128 --tokens 8192 --rounds 7 > "$OUT/z_from_ring.log" 2>&1
echo "ablate rc=$?"; grep -v "TileLang\|^$" "$OUT/z_from_ring.log" | tail -14 | cut -c1-160
