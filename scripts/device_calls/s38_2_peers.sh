#!/usr/bin/env bash
# Thirty-eighth session (not run: the device time was spent): the backward beside FLA and FlashQLA at the published
# backward's head configurations given (e.g. `s38_2_peers.sh 2,4 4,8`), eight mixes each. A cold head configuration
# takes FLA's autotuning (about 60 s) and FlashQLA's backward compile (about 100 s) before its timings: 190 s was too
# little for (2, 4) and (8, 16) on the warm H100 of the 38th session; 330 s each, at most one or two per call. Needs
# .carry/flashqla-*.whl and .carry/peers.tar.xz.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
MIXES="--mixes 1x32768 1x8192 16384+16384 4096+4096 8192x4 4096x8 2048x4 1024x8"
for heads in "$@"; do
  peer_table bwd "$heads" 330 "--libs flashqla,fla,flash_qla $MIXES"
done
