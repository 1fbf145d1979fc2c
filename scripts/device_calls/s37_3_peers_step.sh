#!/usr/bin/env bash
# For the thirty-seventh session (written in the thirty-sixth, not run): the training step (forward + backward through
# autograd, bench_gdn.py --mode fwdbwd) beside FLA and FlashQLA at (32, 32) and (16, 32), eight mixes each (issue 5
# asks for every training-step shape). Set FLASHQLA_TRAIN_NOPREP in the call's command if s37_1 turned it on by
# measurement but not yet by default. Needs the wheel and .carry/peers.tar.xz. About 500 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
MIXES="--mixes 1x32768 1x8192 16384+16384 4096+4096 8192x4 4096x8 2048x4 1024x8"
peer_table fwdbwd 32,32 250 "--libs flashqla,fla,flash_qla $MIXES"
peer_table fwdbwd 16,32 230 "--libs flashqla,fla,flash_qla $MIXES"
