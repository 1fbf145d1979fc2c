#!/usr/bin/env bash
# For the thirty-sixth session (written in the thirty-fifth, not run): the GPU tests of e5993f3's wheel, the first
# with math_pair in the prep-free forward and dq_fold (registers 160 / 168 / 160 / 24) in the fused backward. Both
# were checked in the 35th session only by kernel- and op-level comparisons (benchmarks/results/s35/README.md): math_pair
# bitwise equal to the shipped row in the op at seven shapes; dq_fold's outputs against the two-pass pair at three
# mixes. Here: every forward and backward test against float64 (prefill, context parallelism, edge shapes, callers,
# memory; the fused backward, the backward, properties). Needs .carry/flashqla-*.whl. About 450 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
nvidia-smi --query-gpu=name --format=csv,noheader
run_pytest "$OUT/pytest_fwd.log" 200 gpu tests/test_prefill_gpu.py tests/test_cp_gpu.py tests/test_gdn_fwd_gpu.py \
  tests/test_callers_gpu.py tests/test_memory_gpu.py
run_pytest "$OUT/pytest_bwd.log" 200 gpu tests/test_fused_bwd_gpu.py tests/test_gdn_bwd_gpu.py \
  tests/test_properties_gpu.py
run_pytest "$OUT/pytest_edge.log" 120 gpu tests/test_edge_gpu.py
