#!/usr/bin/env bash
# (Written in the twenty-third session for the next one; not yet run.) One GPU, the wheel of .carry/COMMIT: the tables
# not yet at the current kernels that fit one call: the published backward's (2, 4) against FlashQLA (the twenty-third
# session's run stopped before it; FlashQLA compiles its backward for 61-69 s per configuration) and the forward with
# every peer at (16, 64) (last table 7d6da95). About 420 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
FQ_TMP=/tmp/g0 FQ_BENCH_TIMEOUT=170 OUT=/tmp/o_b bash scripts/gpu_bench.sh --bwd "--heads 2,4 --published-bwd --libs flashqla,flash_qla"
cp /tmp/o_b/H200_bwd.json "$OUT/H200_bwd_2_4.json"; cp /tmp/o_b/H200_bwd.md "$OUT/H200_bwd_2_4.md"
grep "^| hk" "$OUT/H200_bwd_2_4.md" | cut -c1-110 | head -8; grep "^\[bench\]" /tmp/o_b/bench_bwd.log | tail -1
FQ_TMP=/tmp/g0 FQ_BENCH_TIMEOUT=220 OUT=/tmp/o_f bash scripts/gpu_bench.sh --fwd "--heads 16,64"
cp /tmp/o_f/H200_fwd.json "$OUT/H200_fwd_16_64.json"; cp /tmp/o_f/H200_fwd.md "$OUT/H200_fwd_16_64.md"
grep "^| [A-Z0-9]" "$OUT/H200_fwd_16_64.md" | cut -c1-150 | tail -19; grep "^\[bench\]" /tmp/o_f/bench_fwd.log | tail -1
