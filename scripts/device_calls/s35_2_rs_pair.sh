#!/usr/bin/env bash
# For the thirty-fifth session (written in the thirty-fourth, not run): the prep path's 128-wide register-operand
# forward (gdn_fwd_rs.py, the kernel at groups of v-heads with several sequences) with both math warpgroups on one
# code path (math_pair; SASS 11,696 -> 9,856 instructions), against the shipped row (fwdrs128er): o should be bitwise
# equal (the same products; ablate.py's last column), then interleaved times. JIT from the tree with the fence
# rewrite (common/fence_fix.py). Needs .carry/peers.tar.xz (TileLang). About 150 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
nvidia-smi --query-gpu=name --format=csv,noheader
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 300 python3 benchmarks/ablate.py --kernels fwdrs128er fwdrs128erp \
  --variants cur --heads 16,32 32,32 --tokens 8192 --rounds 5 > "$OUT/ablate_rs_pair.log" 2>&1
echo "ablate rc=$?"; grep -v "TileLang\|^$" "$OUT/ablate_rs_pair.log" | tail -12 | cut -c1-160
