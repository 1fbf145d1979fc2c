#!/usr/bin/env bash
# Written in the 36th session, updated in the 37th (not run: no device time was left): the training step (forward +
# backward through autograd, bench_gdn.py --mode fwdbwd) beside FLA and FlashQLA at (32, 32) and (16, 32), eight mixes
# each (issue 5 asks for every training-step shape), then the backward alone at (16, 32) (the published backward's
# head configuration with the cluster-fused backward, default since 524d97f). Needs a wheel of 524d97f or later and
# .carry/peers.tar.xz. About 560 s: on one call with nothing else.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
MIXES="--mixes 1x32768 1x8192 16384+16384 4096+4096 8192x4 4096x8 2048x4 1024x8"
peer_table fwdbwd 16,32 230 "--libs flashqla,fla,flash_qla $MIXES"
peer_table bwd 16,32 150 "--libs flashqla,fla,flash_qla $MIXES"
peer_table fwdbwd 32,32 170 "--libs flashqla,fla,flash_qla $MIXES"
