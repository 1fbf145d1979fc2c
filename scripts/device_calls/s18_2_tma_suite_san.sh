#!/usr/bin/env bash
# One GPU, the wheel with the TMA stores on (prep's A and Z, forward storer's h, state gradient's dh): the GPU suite,
# the edge stage, compute-sanitizer of every flashqla kernel (default widths, then the forward forced to BV = 128),
# and the chunk prep's ablation bits (where its time goes now) at 32768 tokens.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
run_pytest "$OUT/pytest.log" 210 "not edge"
run_pytest "$OUT/pytest_edge.log" 100 edge
run_sanitizer /tmp/san gdn_ 110
FLASHQLA_FWD_BLOCK_V=128 run_sanitizer /tmp/san128 gdn_fwd 60 "racecheck memcheck"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 100 python3 benchmarks/ablate.py --kernels prep --variants cur ablate \
  --tokens 32768 --heads 2,8 16,64 > "$OUT/ablate_prep_bits.log" 2>&1
echo "prep ablate rc=$?"; grep -A40 "^kernel " "$OUT/ablate_prep_bits.log" | cut -c1-100
