#!/usr/bin/env bash
# One GPU, a1bdf84's wheel (its kernels = HEAD's defaults: the prep's mma_level1 + diag8 on): the forward with peers at
# (32, 32) (against 98b49a0's table, H200_fwd_98b49a0_32_32.md) and at (16, 16), 19 mixes each.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
for heads in 32,32 16,16; do
  tag=${heads/,/_}
  FQ_TMP=/tmp/g0 FQ_BENCH_TIMEOUT=${FQ_BENCH_TIMEOUT:-260} OUT=/tmp/o_$tag bash scripts/gpu_bench.sh --fwd "--heads $heads"
  cp /tmp/o_$tag/H200_fwd.json "$OUT/H200_fwd_$tag.json"; cp /tmp/o_$tag/H200_fwd.md "$OUT/H200_fwd_$tag.md"
  grep "^| [A-Z]" "$OUT/H200_fwd_$tag.md" | cut -c1-150 | tail -19; grep "^\[bench\]" /tmp/o_$tag/bench_fwd.log | tail -1
done
