#!/usr/bin/env bash
# Twenty-seventh session, call 6: HEAD's wheel (z_from_ring at BV = 128) against 4055a3f's (the same forward before it):
# the forward, block-V and CP GPU tests, then flashqla alone by wheel (base, new, base again) for the forward. About
# 250 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
install_ab_wheel 4055a3f
run_pytest "$OUT/pytest_fwd.log" 150 gpu tests/test_gdn_fwd_gpu.py tests/test_fwd_block_v_gpu.py tests/test_cp_gpu.py \
  tests/test_chunk_states_gpu.py
ab_drift fwd 4055a3f new "32,32 16,32 16,64 8,24" "1x32768 8192x4 4096x8 2048x4 1024x8"
