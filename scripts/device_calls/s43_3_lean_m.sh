#!/usr/bin/env bash
# Forty-third session, call 3: the backward warm-up's lean transition rows (gdn_bwd_dh lean_m, branch lean-m, ac06f45)
# against main's wheel (8068671, every GPU test passed in s43_2). The lean wheel's backward and CP GPU tests, then
# flashqla alone: main, lean, main again, backward at (4, 8), (2, 4), (8, 16), (16, 32) x 4 mixes; then with an
# argument (e.g. 2,4) the lean wheel's backward beside FlashQLA there (common.sh's peer_table). Needs .carry/flashqla-*.whl (lean),
# .carry/ab/main.zip, .carry/COMMIT and .carry/peers.tar.xz.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
install_ab_wheel main
run_pytest "$OUT/pytest_lean.log" 200 gpu tests/test_gdn_bwd_gpu.py tests/test_cp_gpu.py tests/test_walk_split_gpu.py \
  tests/test_streams_gpu.py tests/test_cp_scan_gpu.py tests/test_fused_groups_gpu.py
MIXES="1x8192 4096+4096 1x32768 8192x4"
AB_TIMEOUT=60 ab_runs bwd "4,8 2,4 8,16 16,32" "$MIXES" main=/tmp/site_main lean=/tmp/site main2=/tmp/site_main
[ -n "${1:-}" ] || exit 0
install_peers
bwd_peer_table "$1" 200
