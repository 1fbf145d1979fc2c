#!/usr/bin/env bash
# For the thirty-third session (written in the thirty-second, not run): the forward at (32, 32), every mix, beside FLA
# and FlashQLA, on the shipped wheel (on an H200 if one comes: the prep-free kernel was measured on H100s only), by
# common.sh's peer_table (scripts/gpu_bench.sh: the table's commit column from .carry/COMMIT). Needs the wheel and
# .carry/peers.tar.xz. About 330 s (FlashQLA's first-use compiles).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
peer_table fwd 32,32 420 "--libs flashqla,fla,flash_qla"
