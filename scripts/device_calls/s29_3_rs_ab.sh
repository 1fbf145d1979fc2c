#!/usr/bin/env bash
# Twenty-ninth session, call 3 (not run: no machine could be started after call 2; the next session's first call):
# the register-operand forward's timings, which call 2's filter skipped (it read "L2 error" in the error table as a
# failure; its 27 tests passed on an H100). Any wheel with gdn_fwd_rs (7604a02 on; s29_2's had PDL on as well, so
# FLASHQLA_PDL=0 throughout: call 2 measured PDL no faster). flashqla alone, one process per run: the forward by
# default, with the register-operand forward at the op's width, and at each width forced with and without it, the
# default again (drift); the training step with and without it (about 120 s); then, with the peers bundle's
# TileLang (.carry/peers.tar.xz), ablate.py's kernel times per chunk against the default kernel of each width on the
# same inputs, interleaved (about 130 s more).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
S=/tmp/site:FLASHQLA_PDL=0
ab_runs fwd "32,32 16,16" "1x8192 8192x4 2048x4 1x32768 4096x8" d=$S rs=$S,FLASHQLA_FWD_RS=1 \
  d128=$S,FLASHQLA_FWD_BLOCK_V=128 rs128=$S,FLASHQLA_FWD_RS=1,FLASHQLA_FWD_BLOCK_V=128 \
  d64=$S,FLASHQLA_FWD_BLOCK_V=64 rs64=$S,FLASHQLA_FWD_RS=1,FLASHQLA_FWD_BLOCK_V=64 db=$S
ab_runs fwdbwd "16,16 32,32" "8192x4 1x8192" d=$S rs=$S,FLASHQLA_FWD_RS=1
if [ -f .carry/peers.tar.xz ]; then
  mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
  PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 200 python3 benchmarks/ablate.py --kernels fwd128thzr fwdrs128 \
    fwd_soth fwdrs64 --variants cur --heads 32,32 128,128 --tokens 8192 --rounds 5 > "$OUT/ablate_rs.log" 2>&1
  echo "ablate rc=$?"; grep -v "TileLang\|^$" "$OUT/ablate_rs.log" | tail -14 | cut -c1-160
fi
