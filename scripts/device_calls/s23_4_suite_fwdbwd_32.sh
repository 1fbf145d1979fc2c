#!/usr/bin/env bash
# Twenty-third session, fourth call (no two-GPU host lent). One GPU, e7e645b's wheel (the chunk gradient's gmax 1
# variant): the GPU suite without the edge stage, then the training step with the peers at (32, 32), every mix.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
run_pytest "$OUT/pytest.log" 170 "not edge"
peer_table fwdbwd 32,32 360
