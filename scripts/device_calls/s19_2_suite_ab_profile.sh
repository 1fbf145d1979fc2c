#!/usr/bin/env bash
# One GPU, the wheel with the prep's z_rs + tma_loads and the chunk gradient's dl_rs on: the GPU suite and the edge
# stage; then flashqla alone by wheel (09adab1: the eighteenth session's kernels; HEAD), one process each, forward and
# training step at (16, 64), (16, 32), (16, 16), (2, 8) x four mixes; then the training step's kernels at (16, 16),
# where the step is furthest behind FlashQLA (0.74x at 1x8192). 09adab1's wheel in .carry/ab/09adab1.zip.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
run_pytest "$OUT/pytest.log" 220 "not edge"
run_pytest "$OUT/pytest_edge.log" 110 edge
install_ab_wheel 09adab1
ab_flashqla "16,64 16,32 16,16 2,8" 09adab1
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 60 python3 benchmarks/profile_kernels.py --heads 16,16 \
  --mixes 1x8192 1x32768 > "$OUT/profile_16_16.log" 2>&1
echo "profile rc=$?"; grep -v "^\s*$" "$OUT/profile_16_16.log" | cut -c1-160 | head -60
