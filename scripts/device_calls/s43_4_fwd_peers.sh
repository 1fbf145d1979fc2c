#!/usr/bin/env bash
# Forty-third session, call 4: the forward beside FLA and FlashQLA at HEADS (default 16,64: the README's weakest
# forward, 0.81x the best peer with 7d6da95's older kernels), every mix, on 8068671's wheel (common.sh's peer_table).
# Needs .carry/flashqla-*.whl and .carry/peers.tar.xz.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
install_peers
peer_table fwd "${1:-16,64}" "${2:-420}" "--libs flashqla,fla,flash_qla"
