#!/usr/bin/env bash
# Twenty-fifth session: where the fused backward's time goes in groups of v-heads (s25_1: 1.07-1.31x the two passes'
# time at groups of two): per-kernel GPU time of a training step (benchmarks/profile_kernels.py) at (16, 32) with the
# fused backward and with the two passes, and at (32, 32) fused (the same v-heads, one per qk-head), 1x32768.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
for run in "1 16,32" "0 16,32" "1 32,32"; do
  set -- $run
  FLASHQLA_FUSED_BWD=$1 PYTHONPATH=/tmp/site timeout 60 python3 benchmarks/profile_kernels.py --heads "$2" \
    --mixes 1x32768 > "$OUT/profile_$1_${2/,/_}.log" 2>&1
  echo "== FLASHQLA_FUSED_BWD=$1 heads $2 rc=$?"
  awk '/training step:/{p=1} /chunk states kept/{p=0} p' "$OUT/profile_$1_${2/,/_}.log"
done
