#!/usr/bin/env bash
# Forty-third session, call 6: the backward beside FlashQLA at HEADS (default 8,16; FLA left out), the 8 published
# mixes, on 8068671's wheel, without s43_2's test run (common.sh's peer_table; about 130 s on an H100 with FlashQLA's
# first-use compile). Needs .carry/flashqla-*.whl and .carry/peers.tar.xz.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
install_peers
bwd_peer_table "${1:-8,16}" "${2:-170}"
