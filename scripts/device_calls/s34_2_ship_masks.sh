#!/usr/bin/env bash
# Thirty-fourth session: the wheel with m_nomask, g_nomask and l2_shfl in the prep-free forward's row (56d3a2f). The GPU
# tests that run the prep-free kernel (prefill, context parallelism, edge cases, the forward, callers, memory), then
# the forward at (32, 32), every mix, beside FLA and FlashQLA (common.sh's peer_table). Needs the wheel and
# .carry/peers.tar.xz. About 480 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
cat .carry/COMMIT; nvidia-smi --query-gpu=name --format=csv,noheader
install_wheel
run_pytest "$OUT/pytest_prefill_cp.log" 100 gpu tests/test_prefill_gpu.py tests/test_cp_gpu.py
run_pytest "$OUT/pytest_edge.log" 130 gpu tests/test_edge_gpu.py tests/test_gdn_fwd_gpu.py tests/test_callers_gpu.py \
  tests/test_memory_gpu.py
peer_table fwd 32,32 330 "--libs flashqla,fla,flash_qla"
