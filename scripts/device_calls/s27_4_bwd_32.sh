#!/usr/bin/env bash
# Twenty-seventh session, call 4: the backward alone at (32, 32) with the peers in one process, on HEAD's wheel
# (13a1f88; the fused backward at one v-head per qk-head), eight of the 19 mixes, against H200_bwd_a993033_32_32.md
# (0.74x FlashQLA before the fused backward). About 400 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
peer_table bwd 32,32 420 "--mixes 1x32768 1x8192 16384+16384 4096+4096 8192x4 4096x8 2048x4 1024x8"
