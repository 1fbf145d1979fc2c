#!/usr/bin/env bash
# For the thirty-seventh session (written in the thirty-sixth, not run): the carried wheel beside FLA and FlashQLA,
# the forward at (32, 32) and (16, 32), every mix, by common.sh's peer_table; on an H200 if one comes (issue 4 is
# judged there: FlashInfer's published times are an H200's). Needs the wheel and .carry/peers.tar.xz. About 400 s
# (FlashQLA's first-use compiles).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
peer_table fwd 32,32 220 "--libs flashqla,fla,flash_qla"
peer_table fwd 16,32 200 "--libs flashqla,fla,flash_qla"
