#!/usr/bin/env bash
# Twenty-seventh session, call 2: HEAD's wheel (the sm90 forward forms Z itself, the prep reads no Q and stores no Z;
# row_pad 8 in the fused backward and the default chunk gradient) against 4055a3f's (the same code before): the
# forward, prep, CP and backward GPU tests, then flashqla alone by wheel (base, new, base again) for the forward and
# the training step. About 420 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
install_ab_wheel 4055a3f
run_pytest "$OUT/pytest_z.log" 230 gpu tests/test_gdn_fwd_gpu.py tests/test_chunk_prep_gpu.py tests/test_fwd_block_v_gpu.py \
  tests/test_cp_gpu.py tests/test_fused_bwd_gpu.py tests/test_gdn_bwd_gpu.py
ab_drift fwd 4055a3f new "32,32 16,32 2,8 16,64" "1x8192 1x32768 8192x4 4096x8 1024x8"
ab_drift fwdbwd 4055a3f new "32,32 16,32 16,16" "1x32768 8192x4 1024x8"
