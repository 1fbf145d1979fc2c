#!/usr/bin/env bash
# Thirty-third session, last call: the forward at (16, 16), every mix, beside FLA and FlashQLA, on 30c7d47's wheel
# (the code of 1a3f23e: the shipped options, context parallelism without the chunk prep where the plan picks the
# 128-wide slice), by common.sh's peer_table. Needs the wheel and .carry/peers.tar.xz. About 400 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
cat .carry/COMMIT; nvidia-smi --query-gpu=name --format=csv,noheader
peer_table fwd 16,16 390 "--libs flashqla,fla,flash_qla"
