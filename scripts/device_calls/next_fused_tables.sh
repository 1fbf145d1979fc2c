#!/usr/bin/env bash
# (Written in the twenty-fourth session for the next one; not yet run.) One GPU, the wheel of .carry/COMMIT (the fused
# backward on by default at one v-head per qk-head): the training step with the peers at the head configuration given
# (default 32,32; then 16,16 in a second call), every length mix, FLA and FlashQLA in the same process; they replace
# H200_fused_bwd.md's estimate (0.92-1.04x FlashQLA at ten shapes). About 300 s per configuration.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
peer_table fwdbwd "${1:-32,32}" 330
