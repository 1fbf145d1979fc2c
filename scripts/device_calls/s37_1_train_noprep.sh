#!/usr/bin/env bash
# For the thirty-seventh session (written in the thirty-sixth, not run): FLASHQLA_TRAIN_NOPREP=1 (the training
# forward as the chunk prep without Z and the prep-free kernel, csrc/ops/gdn_fwd.cpp) on the carried wheel: its GPU
# tests, the forward's and backward's files with it forced on, then the training step (bench_gdn.py --mode fwdbwd,
# flashqla alone, one process per run) with it 0 / 1 / 0 again at three head configurations, and the step's kernels
# with it on; then the backward alone with the recompute forced 64 wide. Needs .carry/flashqla-*.whl. About 450 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
nvidia-smi --query-gpu=name --format=csv,noheader
run_pytest "$OUT/pytest_train_noprep.log" 120 gpu tests/test_train_noprep_gpu.py
FLASHQLA_TRAIN_NOPREP=1 run_pytest "$OUT/pytest_forced.log" 240 gpu tests/test_gdn_fwd_gpu.py \
  tests/test_gdn_bwd_gpu.py tests/test_fused_bwd_gpu.py tests/test_properties_gpu.py
AB_TIMEOUT=100 ab_runs fwdbwd "32,32 16,32 16,16" "8192x4 4096x8 2048x4 1024x8 1x8192" \
  prep=/tmp/site:FLASHQLA_TRAIN_NOPREP=0 noprep=/tmp/site:FLASHQLA_TRAIN_NOPREP=1 prep_again=/tmp/site:FLASHQLA_TRAIN_NOPREP=0
FLASHQLA_TRAIN_NOPREP=1 profile_step 1 "32,32" "8192x4" 60
# the backward's state recompute at the 64-wide slice (twice the CTAs of the 128-wide plan at many sequences: two
# chains per SM where they fit) against the plan's width: the backward alone, flashqla alone, (32, 32)
AB_TIMEOUT=100 ab_runs bwd "32,32" "8192x4 4096x8 2048x4 1024x8" d=/tmp/site w64=/tmp/site:FLASHQLA_FWD_BLOCK_V=64 \
  d_again=/tmp/site
