#!/usr/bin/env bash
# For the thirty-sixth session (written in the thirty-fifth, not run): with math_pair shipped (e5993f3), the
# prep-free kernel's two other openings, flashqla alone on the carried wheel, one process per run: (1) the
# single-sequence and two-long-sequence shapes, where the plan takes the 64-wide prep path and FlashQLA led in the
# 34th session, against BV 128 forced (the prep-free kernel with context parallelism); (2) groups of v-heads (by
# default the prep path) against FLASHQLA_FWD_NOPREP=1. The default again last (the drift). About 300 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
nvidia-smi --query-gpu=name --format=csv,noheader
AB_TIMEOUT=80 ab_runs fwd "32,32 16,16" "1x8192 1x2048 1x32768 16384+16384 4096+4096" d=/tmp/site \
  w128=/tmp/site:FLASHQLA_FWD_BLOCK_V=128 d_again=/tmp/site
AB_TIMEOUT=80 ab_runs fwd "16,32 8,32 16,64" "8192x4 4096x8 2048x4 1024x8" prep=/tmp/site \
  noprep=/tmp/site:FLASHQLA_FWD_NOPREP=1 prep_again=/tmp/site
