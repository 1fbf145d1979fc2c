#!/usr/bin/env bash
# Thirtieth session, call 3: the register-operand forward with early_release, on by default at BV = 64
# (csrc/ops/dispatch.h fwd_rs_wanted), in the op. The forward GPU files on the wheel (the default now runs it at
# BV = 64; test_fwd_rs_gpu.py forces it at both widths), then flashqla alone, one process per run: the forward by
# default, with FLASHQLA_FWD_RS=0 (neither width), =1 (both), each width forced (the
# V-slice model's choice against the other: kChunkTimeBv128), the default again (drift); the training step by default
# and with =0. About 400 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
nvidia-smi --query-gpu=name --format=csv,noheader
run_pytest "$OUT/pytest_fwd.log" 240 gpu tests/test_fwd_rs_gpu.py tests/test_gdn_fwd_gpu.py tests/test_cp_gpu.py \
  tests/test_fwd_block_v_gpu.py tests/test_edge_gpu.py
S=/tmp/site
ab_runs fwd "32,32 16,16" "1x8192 8192x4 2048x4 1x32768 4096x8 1024x8" d=$S off=$S:FLASHQLA_FWD_RS=0 \
  all=$S:FLASHQLA_FWD_RS=1 f64=$S:FLASHQLA_FWD_BLOCK_V=64 f128=$S:FLASHQLA_FWD_BLOCK_V=128 db=$S
ab_runs fwdbwd "16,16 32,32" "8192x4 1x8192" d=$S off=$S:FLASHQLA_FWD_RS=0
