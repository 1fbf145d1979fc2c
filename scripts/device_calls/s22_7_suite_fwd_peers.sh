#!/usr/bin/env bash
# One GPU, fc30405's wheel: the GPU suite without the edge stage, then the forward with peers at (8, 32) (its last
# table is c08f10c's).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
run_pytest "$OUT/pytest.log" 245 "not edge"
peer_table fwd 8,32 185
