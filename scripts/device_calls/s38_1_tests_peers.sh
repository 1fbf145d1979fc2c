#!/usr/bin/env bash
# Thirty-eighth session: the first GPU run of the default that takes the cluster-fused backward at two v-heads per
# qk-head (524d97f and the test rewrites after it), then the backward beside FLA and FlashQLA at (16, 32) and (8, 16),
# two of the published backward's head configurations, eight mixes each (s38_2 runs the other two). Needs
# .carry/flashqla-*.whl (HEAD's) and .carry/peers.tar.xz. About 550 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
nvidia-smi --query-gpu=name --format=csv,noheader
run_pytest "$OUT/pytest_bwd.log" 170 gpu tests/test_fused_groups_gpu.py tests/test_fused_bwd_gpu.py \
  tests/test_gdn_bwd_gpu.py tests/test_memory_gpu.py
MIXES="--mixes 1x32768 1x8192 16384+16384 4096+4096 8192x4 4096x8 2048x4 1024x8"
peer_table bwd 16,32 180 "--libs flashqla,fla,flash_qla $MIXES"
peer_table bwd 8,16 180 "--libs flashqla,fla,flash_qla $MIXES"
