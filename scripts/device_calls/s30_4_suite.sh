#!/usr/bin/env bash
# Thirtieth session, call 5: GPU files on HEAD's wheel as a user installs it (FLASHQLA_FWD_RS off by default again,
# the register-operand rows with early_release): the register-operand forward's (its setting test in its final form),
# the forward's, dispatch, callers and the backward's. The whole suite (~450 s) no longer fits this session's device
# time. About 200 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
run_pytest "$OUT/pytest_subset.log" 200 gpu tests/test_fwd_rs_gpu.py tests/test_gdn_fwd_gpu.py \
  tests/test_dispatch_gpu.py tests/test_callers_gpu.py tests/test_gdn_bwd_gpu.py
