#!/usr/bin/env bash
# One GPU, HEAD's wheel (27ea851: the seventeenth session's off options): the edge stage, compute-sanitizer of the
# forward with the 128-wide TMA-store kernel forced (FLASHQLA_FWD_BLOCK_V=128), then the TMA-store options against
# the defaults in ablate.py (chunk gradient's dv, forward storer's h, state gradient's dh, the prep's A and Z).
# (ablate.py then: spec prep4t was the prep with TMA stores; since the eighteenth session that is spec prep, and prep4e
# the element stores)
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
run_pytest "$OUT/pytest_edge.log" 120 edge
FLASHQLA_FWD_BLOCK_V=128 run_sanitizer /tmp/san128 gdn_fwd 100
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
ab() {  # name, timeout, ablate args...
  local name=$1 lim=$2; shift 2
  PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout "$lim" python3 benchmarks/ablate.py --variants cur "$@" \
    > "$OUT/ablate_$name.log" 2>&1
  echo "== $name rc=$?"; grep -A40 "^kernel " "$OUT/ablate_$name.log" | cut -c1-130; tail -2 "$OUT/ablate_$name.log"
}
ab bwdc 110 --kernels bwdcws bwdcwst --heads 2,8 16,32 16,64
ab fwdh 80 --kernels fwd_so fwd_soth fwd128t fwd128th --no-o --store-h --heads 2,8 16,64 32,128
ab dh 70 --kernels bwddh bwddht --heads 2,8 16,64
ab prep 80 --kernels prep prep4t --tokens 32768 --heads 2,8 16,64
