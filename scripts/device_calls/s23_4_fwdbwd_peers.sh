#!/usr/bin/env bash
# Twenty-third session, fourth call. Two GPUs of one host (nvidia-h200-x2), e7e645b's wheel (the chunk gradient's
# gmax 1 variant): the training step with the peers at the two one-v-head-per-group configurations, every mix of the
# published table, one configuration per GPU (FQ_BENCH_TIMEOUT 370 s each). Not run: no two-GPU host was lent that day
# (s23_4_suite_fwdbwd_32.sh and s23_5 ran the two configurations on one GPU); kept for a session that has one.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
run() {  # gpu heads
  CUDA_VISIBLE_DEVICES=$1 FQ_TMP=/tmp/g$1 FQ_BENCH_TIMEOUT=370 OUT=/tmp/o_$2 bash scripts/gpu_bench.sh --fwdbwd "--heads $2" \
    > "$OUT/bench_${2/,/_}.log" 2>&1
  cp /tmp/o_$2/H200_fwdbwd.json "$OUT/H200_fwdbwd_${2/,/_}.json" 2>/dev/null
  cp /tmp/o_$2/H200_fwdbwd.md "$OUT/H200_fwdbwd_${2/,/_}.md" 2>/dev/null
  cp /tmp/o_$2/bench_fwdbwd.log "$OUT/bench_fwdbwd_${2/,/_}.log" 2>/dev/null
}
run 0 32,32 &
run 1 16,16 &
wait
for h in 32,32 16,16; do
  grep -h "^| [A-Z0-9]" "$OUT/H200_fwdbwd_${h/,/_}.md" 2>/dev/null | cut -c1-130; grep -h "^\[bench\]" "$OUT/bench_fwdbwd_${h/,/_}.log" | tail -2
done
