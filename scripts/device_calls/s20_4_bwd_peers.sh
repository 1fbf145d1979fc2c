#!/usr/bin/env bash
# One GPU, a1bdf84's wheel (HEAD's kernels): the backward alone with peers at (32, 32), 19 mixes (issue 5's bwd
# geomean against FlashQLA; last measured at 7ee0141).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
FQ_TMP=/tmp/g0 FQ_BENCH_TIMEOUT=${FQ_BENCH_TIMEOUT:-420} OUT=/tmp/o_bwd bash scripts/gpu_bench.sh --bwd "--heads 32,32"
cp /tmp/o_bwd/H200_bwd.json "$OUT/H200_bwd_32_32.json"; cp /tmp/o_bwd/H200_bwd.md "$OUT/H200_bwd_32_32.md"
grep "^| [A-Z]" "$OUT/H200_bwd_32_32.md" | cut -c1-150 | tail -19; grep "^\[bench\]" /tmp/o_bwd/bench_bwd.log | tail -2
tail -3 /tmp/o_bwd/bench_bwd.log
