#!/usr/bin/env bash
# Thirtieth session, call 5: the whole GPU suite on HEAD's wheel as a user installs it (FLASHQLA_FWD_RS off by
# default again; the register-operand rows with early_release; the 4096-sequence edge test's references per 512
# sequences, which an 80 GB card holds). About 450 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
run_pytest "$OUT/pytest_suite.log" 480 gpu
