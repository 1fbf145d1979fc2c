#!/usr/bin/env bash
# Thirty-eighth session, after s38_1: the backward beside FLA and FlashQLA at the published backward's other two head
# configurations, (4, 8) and (2, 4), then the training step at (16, 32), eight mixes each. Needs .carry/flashqla-*.whl
# and .carry/peers.tar.xz. About 570 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
MIXES="--mixes 1x32768 1x8192 16384+16384 4096+4096 8192x4 4096x8 2048x4 1024x8"
peer_table bwd 4,8 170 "--libs flashqla,fla,flash_qla $MIXES"
peer_table bwd 2,4 170 "--libs flashqla,fla,flash_qla $MIXES"
peer_table fwdbwd 16,32 230 "--libs flashqla,fla,flash_qla $MIXES"
