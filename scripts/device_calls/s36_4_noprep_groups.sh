#!/usr/bin/env bash
# Thirty-sixth session: the prep-free forward by default at any group (092c469) after s36_3 measured
# FLASHQLA_FWD_NOPREP=1 at 0.80-0.92x the prep path's time at (16, 32), (8, 32), (16, 64). Here: (1) the new wheel's
# tests/test_prefill_gpu.py; (2) e5993f3's wheel (the prep path at groups) against the new one (the prep-free kernel)
# at five more group shapes, e5993f3 again last (the drift); (3) the new wheel beside FLA and FlashQLA at (16, 32),
# Qwen3-Next's heads, forward. Needs .carry/flashqla-*.whl (092c469), .carry/ab/e5993f3.zip, .carry/peers.tar.xz.
# About 400 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
install_ab_wheel e5993f3
nvidia-smi --query-gpu=name --format=csv,noheader
run_pytest "$OUT/pytest_prefill.log" 100 gpu tests/test_prefill_gpu.py
AB_TIMEOUT=100 ab_runs fwd "2,8 4,16 8,24 16,48 32,64" "8192x4 4096x8 2048x4 1024x8 1x32768 16384+16384" \
  prep=/tmp/site_e5993f3 noprep=/tmp/site prep_again=/tmp/site_e5993f3
peer_table fwd 16,32 240 "--libs flashqla,fla,flash_qla"
