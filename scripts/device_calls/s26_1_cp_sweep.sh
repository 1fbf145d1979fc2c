#!/usr/bin/env bash
# Twenty-sixth session, call 1: the fused backward's segment plan (docs/speed_plan.md Ready 5; kFusedBwdChunkTime = 6.0
# was fitted at one shape). cp_sweep.py on HEAD's wheel: the backward alone (after one untimed forward) at forced
# segment lengths and at the automatic plan, (16, 16) and (32, 32), with the host's length hint as the training step
# passes it (bench_gdn.py). About 250 s.
set -uo pipefail
. scripts/device_calls/common.sh
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
install_wheel
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 420 python3 benchmarks/cp_sweep.py --no-wide --hint \
  --heads 16,16 32,32 --mixes 1x8192 1x16384 1x32768 6144+2048 24576+8192 8192x4 4096x8 1024x8 \
  --cp -1 0 4 8 16 32 64 128 > "$OUT/cp_sweep_fused.log" 2>&1
echo "cp_sweep rc=$?"; cat "$OUT/cp_sweep_fused.log" | grep -v "^$" | cut -c1-80
