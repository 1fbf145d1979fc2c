#!/usr/bin/env bash
# Two GPUs of one host (nvidia-h200-x2): a training step with the three peers at two head configurations at once,
# one per GPU, each with its own install, peer caches and time limit (FQ_BENCH_TIMEOUT, default 365 s: one
# configuration alone takes 290-330 s with the peers' first-use compiles, two at once somewhat more).
#   bash scripts/device_calls/fwdbwd_pair.sh 16,16 32,32
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
run() {  # gpu heads
  CUDA_VISIBLE_DEVICES=$1 FQ_TMP=/tmp/g$1 FQ_BENCH_TIMEOUT=${FQ_BENCH_TIMEOUT:-365} OUT=/tmp/o_$2 \
    bash scripts/gpu_bench.sh --fwdbwd "--heads $2 --mixes 1x8192 1x32768 --libs flashqla,flashqla_keep,fla,flash_qla" \
    > "$OUT/bench_${2/,/_}.log" 2>&1
  cp /tmp/o_$2/H200_fwdbwd.json "$OUT/H200_fwdbwd_${2/,/_}.json" 2>/dev/null
  cp /tmp/o_$2/H200_fwdbwd.md "$OUT/H200_fwdbwd_${2/,/_}.md" 2>/dev/null
}
run 0 "$1" &
run 1 "$2" &
wait
for h in "$1" "$2"; do grep -h "^| [0-9]" "$OUT/H200_fwdbwd_${h/,/_}.md" 2>/dev/null; tail -2 "$OUT/bench_${h/,/_}.log"; done
