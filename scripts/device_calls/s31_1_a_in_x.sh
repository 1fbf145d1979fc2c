#!/usr/bin/env bash
# For the thirty-first session's first call (written in the thirtieth, not run): does the warpgroup that forms X have
# room for the inverse too? ablate.py's kernel times per chunk of the register-operand forward at BV = 64 with A
# loaded (fwdrs64erA) and formed by X's warpgroup (fwdrs64ea: K K^T by wgmma and the prep's blockwise solve,
# common/unit_lower_inverse.py), both on inputs whose A is the true inverse (o within A's rounding of each other: the
# last column, meaningful for fwdrs64ea only), beside the default 64-wide kernel and the RS kernel on ablate.py's
# usual inputs. If fwdrs64ea's period stays near fwdrs64erA's, docs/speed_plan.md Ready 1 (b) holds at BV = 64.
# Then the 128-wide RS kernel with sk_halves at 208 and 192 registers, and at 192 / 104 / 24 with A formed by X's
# warpgroup. Needs the peers bundle's TileLang (.carry/peers.tar.xz); about 330 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
nvidia-smi --query-gpu=name --format=csv,noheader
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 400 python3 benchmarks/ablate.py --kernels fwdrs64erA fwdrs64ea \
  fwd_soth fwdrs64er --variants cur --heads 32,32 128,128 --tokens 8192 --rounds 5 > "$OUT/ablate_a_in_x.log" 2>&1
echo "ablate rc=$?"; grep -v "TileLang\|^$" "$OUT/ablate_a_in_x.log" | tail -12 | cut -c1-160
# the 128-wide RS kernel with SK in halves, at 208 and at 192 registers for the math warpgroups (Ready 1 (a)); o of
# both should be bitwise fwdrs128er's (the last column)
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 300 python3 benchmarks/ablate.py --kernels fwdrs128er fwdrs128ersk \
  fwdrs128ersk192 fwd128thzr --variants cur --heads 32,32 128,128 --tokens 8192 --rounds 5 \
  > "$OUT/ablate_sk_halves.log" 2>&1
echo "ablate rc=$?"; grep -v "TileLang\|^$" "$OUT/ablate_sk_halves.log" | tail -12 | cut -c1-160
# the 128-wide RS kernel at 192 / 104 / 24 with A formed by X's warpgroup (104 registers) against it loading A, on
# inputs whose A is the true inverse: Ready 1 (b)'s price at the width that matters (o within A's rounding: the last
# column)
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 300 python3 benchmarks/ablate.py \
  --kernels fwdrs128erskA fwdrs128erska --variants cur --heads 32,32 128,128 --tokens 8192 --rounds 5 \
  > "$OUT/ablate_a_in_x_128.log" 2>&1
echo "ablate rc=$?"; grep -v "TileLang\|^$" "$OUT/ablate_a_in_x_128.log" | tail -8 | cut -c1-160
