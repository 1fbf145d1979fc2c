#!/usr/bin/env bash
# Twenty-fifth session: where the fused backward's time goes in groups of v-heads (s25_1: 1.07-1.31x the two passes'
# time at groups of two): per-kernel GPU time of a training step (benchmarks/profile_kernels.py) at (16, 32) with the
# fused backward and with the two passes, and at (32, 32) fused (the same v-heads, one per qk-head), 1x32768.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
profile_step 1 16,32 1x32768
profile_step 0 16,32 1x32768
profile_step 1 32,32 1x32768
