#!/usr/bin/env bash
# Forty-fifth session, call 1: the swizzled register walk (c56f571's wheel, never run): its GPU tests with the walk and
# CP tests, its kernel time per step at (2, 4) 1x32768 beside the 32-wide split walk's, the backward A/B at the
# few-head shapes; then, on an H200 only, the forward beside FLA and FlashQLA at (16, 64) (issue 4's card).
# Needs .carry/flashqla-*.whl and .carry/peers.tar.xz. About 6-8 minutes.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
T0=$(date +%s)
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$GPU"
install_wheel
run_pytest "$OUT/pytest_rs.log" 150 gpu tests/test_walk_rs_gpu.py tests/test_walk_split_gpu.py tests/test_cp_gpu.py
profile_walk_widths 1x32768 40
AB_TIMEOUT=40 ab_base_ratio bwd "4,8 2,4" "1x8192 1x32768 8192x4" rs FLASHQLA_WALK_BV=64
echo "elapsed $(( $(date +%s) - T0 )) s"
case "$GPU" in *H200*) ;; *) exit 0 ;; esac
install_peers
peer_table fwd 16,64 "${1:-150}" "--libs flashqla,fla,flash_qla"
echo "elapsed $(( $(date +%s) - T0 )) s"
