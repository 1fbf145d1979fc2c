#!/usr/bin/env bash
# Forty-third session, call 2: every GPU test on the wheel of 8068671 (the split walk on by default; 7d013cf's
# environment parser, not yet run on a GPU), then the backward beside FlashQLA at HEADS (default 4,8; FLA left out:
# 1.8-3.6x slower in the 40th session's tables), every published mix (common.sh's peer_table; FlashQLA compiles its
# backward for 75-105 s per head configuration). Needs .carry/flashqla-*.whl, .carry/COMMIT and .carry/peers.tar.xz.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
run_pytest "$OUT/pytest_all.log" 300 gpu
install_peers
bwd_peer_table "${1:-4,8}" 250
