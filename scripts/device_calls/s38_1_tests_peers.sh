#!/usr/bin/env bash
# Thirty-eighth session: the first GPU run of the default that takes the cluster-fused backward at two v-heads per
# qk-head (524d97f and the test rewrites after it), the backward beside FLA and FlashQLA at (16, 32) (eight mixes),
# then the backward's forced segment lengths at two v-heads per qk-head (cp_sweep.py: is the fused plan, fitted on
# the one-v-head kernel, right for the cluster kernel?) and the kernels of a (2, 4) step. s38_2 runs the other three
# published backward heads. Needs .carry/flashqla-*.whl (HEAD's) and .carry/peers.tar.xz. About 520 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
nvidia-smi --query-gpu=name --format=csv,noheader
run_pytest "$OUT/pytest_bwd.log" 170 gpu tests/test_fused_groups_gpu.py tests/test_fused_bwd_gpu.py \
  tests/test_gdn_bwd_gpu.py tests/test_memory_gpu.py
MIXES="--mixes 1x32768 1x8192 16384+16384 4096+4096 8192x4 4096x8 2048x4 1024x8"
peer_table bwd 16,32 180 "--libs flashqla,fla,flash_qla $MIXES"
PYTHONPATH=/tmp/site timeout 120 python3 benchmarks/cp_sweep.py --hint --no-wide --heads 16,32 2,4 \
  --mixes 1x32768 1x8192 16384+16384 --cp -1 0 8 16 32 64 > "$OUT/cp_sweep.log" 2>&1
echo "cp_sweep rc=$?"; grep -v "^$\|Warning" "$OUT/cp_sweep.log" | tail -60
profile_step 1 "2,4" "1x8192 1x32768" 30
