#!/usr/bin/env bash
# Forty-third session, call 5 (on an H200 if one comes): the forward beside FLA and FlashQLA at (16, 64) and (32, 32),
# every mix, on 8068671's wheel, where bench_gdn.py also compares FlashInfer's published H200 times (issue 4's
# acceptance). About 100 s and 130 s on an H100 (s43_4). Needs .carry/flashqla-*.whl and .carry/peers.tar.xz.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
install_wheel
install_peers
peer_table fwd 16,64 "${1:-130}" "--libs flashqla,fla,flash_qla"
peer_table fwd 32,32 "${2:-150}" "--libs flashqla,fla,flash_qla"
