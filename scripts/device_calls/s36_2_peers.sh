#!/usr/bin/env bash
# For the thirty-sixth session (written in the thirty-fifth, not run): e5993f3's wheel beside FLA and FlashQLA at
# (32, 32), every mix: the forward (math_pair) and the backward (dq_fold), by common.sh's peer_table. On an H200 if
# one comes (issues 4 and 5 are judged there). Needs the wheel and .carry/peers.tar.xz. About 550 s (FlashQLA's
# first-use compiles).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
peer_table fwd 32,32 260 "--libs flashqla,fla,flash_qla"
peer_table bwd 32,32 260 "--libs flashqla,fla,flash_qla"
