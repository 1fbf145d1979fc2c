#!/usr/bin/env bash
# One GPU: the forward with peers (FLA, FlashQLA; FlashInfer's published times) at FQ_HEADS (default (16, 64) and
# (16, 32), all 19 mixes each), after the single chunk prep (2ca9546).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
heads=${FQ_HEADS:-16,64 16,32}
FQ_TMP=/tmp/g0 FQ_BENCH_TIMEOUT=${FQ_BENCH_TIMEOUT:-420} OUT=/tmp/o_fwd bash scripts/gpu_bench.sh --fwd "--heads $heads"
cp /tmp/o_fwd/H200_fwd.json /tmp/o_fwd/H200_fwd.md /tmp/o_fwd/bench_fwd.log "$OUT/" 2>/dev/null
tail -3 "$OUT/bench_fwd.log"
