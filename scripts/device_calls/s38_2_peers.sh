#!/usr/bin/env bash
# Thirty-eighth session, after s38_1: the backward beside FLA and FlashQLA at the published backward's other three head
# configurations, (8, 16), (4, 8) and (2, 4), eight mixes each. Needs .carry/flashqla-*.whl and .carry/peers.tar.xz.
# About 530 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
MIXES="--mixes 1x32768 1x8192 16384+16384 4096+4096 8192x4 4096x8 2048x4 1024x8"
peer_table bwd 8,16 175 "--libs flashqla,fla,flash_qla $MIXES"
peer_table bwd 4,8 175 "--libs flashqla,fla,flash_qla $MIXES"
peer_table bwd 2,4 175 "--libs flashqla,fla,flash_qla $MIXES"
