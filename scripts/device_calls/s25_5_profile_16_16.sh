#!/usr/bin/env bash
# Twenty-fifth session, last call: where the training step's time goes at (16, 16), where FlashQLA stays ahead on 13 of
# 19 mixes (H200_fwdbwd_8077b2c_16_16.md): per-kernel GPU time (benchmarks/profile_kernels.py) at three mixes, the
# wheel of .carry/COMMIT (8077b2c: the fused backward's kernels of HEAD).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
profile_step 1 16,16 "1x8192 6144+2048 1x32768" 90
