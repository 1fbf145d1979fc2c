#!/usr/bin/env bash
# Forty-seventh session, call 1 (H200): the forward beside FLA and FlashQLA at (16, 64), then at (32, 32), every mix,
# on HEAD's wheel (the 46th session's H200 call had time for (16, 64)'s five single-sequence mixes only: the peers'
# first-use compiles took most of its 150 s). bench_gdn.py compares FlashInfer's published H200 times (issue 4's
# acceptance). The second table gets what is left of DEADLINE_S (default 570). Needs .carry/flashqla-*.whl,
# .carry/COMMIT and .carry/peers.tar.xz.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
T0=$(date +%s)
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
install_wheel
install_peers
peer_table fwd "${1:-16,64}" "${2:-400}" "--libs flashqla,fla,flash_qla"
echo "elapsed $(( $(date +%s) - T0 )) s"
left=$(( ${DEADLINE_S:-570} - ($(date +%s) - T0) ))
[ "$left" -gt 60 ] && peer_table fwd "${3:-32,32}" "$left" "--libs flashqla,fla,flash_qla"
echo "elapsed $(( $(date +%s) - T0 )) s"
