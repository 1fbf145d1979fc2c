#!/usr/bin/env bash
# Twenty-third session, sixth call. One GPU, e7e645b's wheel: the backward alone at the published table's 32 shapes
# ((16, 32), (8, 16), (4, 8), (2, 4) x 8k and 32k tokens in 1, 2, 4, 8 sequences) against FlashQLA in the same process
# (FLA left out for the device time: 1.9-2x slower than flashqla in every earlier backward table).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
FQ_TMP=/tmp/g0 FQ_BENCH_TIMEOUT=400 OUT=/tmp/o_b bash scripts/gpu_bench.sh --bwd "--libs flashqla,flash_qla"
cp /tmp/o_b/H200_bwd.json "$OUT/H200_bwd.json"; cp /tmp/o_b/H200_bwd.md "$OUT/H200_bwd.md"
grep "^| [a-z0-9]" "$OUT/H200_bwd.md" | cut -c1-110 | tail -32; grep "^\[bench\]" /tmp/o_b/bench_bwd.log | tail -2
