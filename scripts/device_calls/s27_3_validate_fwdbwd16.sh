#!/usr/bin/env bash
# Twenty-seventh session, call 3: HEAD's wheel (row_pad 8 in the fused backward and the default chunk gradient; the
# forward as 4055a3f's): the fused and backward GPU tests, then the training step at (16, 16) with the peers in one
# process, all 19 mixes (the twenty-sixth session's table of 84ac579 was lost). About 500 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
run_pytest "$OUT/pytest_bwd.log" 150 gpu tests/test_fused_bwd_gpu.py tests/test_gdn_bwd_gpu.py
peer_table fwdbwd 16,16 380
