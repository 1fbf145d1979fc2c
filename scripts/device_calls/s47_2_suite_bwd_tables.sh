#!/usr/bin/env bash
# Forty-seventh session, call 2 (H200): every GPU test on HEAD's wheel (last run whole on 8068671, 43rd session, an
# H100), then the backward beside FlashQLA (FLA left out: 1.8-3.6x slower) at (4, 8) and (2, 4), the 8 published
# mixes each (common.sh's bwd_peer_table; FlashQLA compiles its backward for 75-105 s per head configuration). The
# second table gets what is left of DEADLINE_S (default 570). Needs .carry/flashqla-*.whl, .carry/COMMIT and
# .carry/peers.tar.xz.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
T0=$(date +%s)
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
install_wheel
run_pytest "$OUT/pytest_all.log" "${1:-220}" gpu
echo "elapsed $(( $(date +%s) - T0 )) s"
install_peers
bwd_peer_table 4,8 "${2:-160}"
echo "elapsed $(( $(date +%s) - T0 )) s"
left=$(( ${DEADLINE_S:-570} - ($(date +%s) - T0) ))
[ "$left" -gt 60 ] && bwd_peer_table 2,4 "$left"
echo "elapsed $(( $(date +%s) - T0 )) s"
