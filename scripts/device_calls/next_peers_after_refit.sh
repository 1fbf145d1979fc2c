#!/usr/bin/env bash
# (Written in the twenty-first session for the next one; not yet run.) Two GPUs of one host (nvidia-h200-x2), HEAD's
# wheel: the peer tables at the refit plans and the max_seqlen hint (bench_gdn.py passes cu_seqlens_cpu to flashqla as
# to FLA): on GPU 0 the backward alone at (32, 32) (against H200_bwd_a1bdf84_32_32.md; the refit's largest backward
# gains are single sequences there), on GPU 1 the forward at (16, 48) then (32, 32) (against H200_fwd_98b49a0_16_48.md
# and H200_fwd_a1bdf84_32_32.md: unequal mixes and single sequences). About 420 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
bwd() {
  CUDA_VISIBLE_DEVICES=0 FQ_TMP=/tmp/g0 FQ_BENCH_TIMEOUT=420 OUT=/tmp/o_bwd bash scripts/gpu_bench.sh --bwd \
    "--heads 32,32" > "$OUT/bench_bwd.log" 2>&1
  cp /tmp/o_bwd/H200_bwd.json "$OUT/H200_bwd_32_32.json"; cp /tmp/o_bwd/H200_bwd.md "$OUT/H200_bwd_32_32.md"
}
fwd() {
  for heads in 16,48 32,32; do
    CUDA_VISIBLE_DEVICES=1 FQ_TMP=/tmp/g1 FQ_BENCH_TIMEOUT=210 OUT=/tmp/o_${heads/,/_} bash scripts/gpu_bench.sh --fwd \
      "--heads $heads" > "$OUT/bench_fwd_${heads/,/_}.log" 2>&1
    cp /tmp/o_${heads/,/_}/H200_fwd.json "$OUT/H200_fwd_${heads/,/_}.json"
    cp /tmp/o_${heads/,/_}/H200_fwd.md "$OUT/H200_fwd_${heads/,/_}.md"
  done
}
bwd &
fwd &
wait
for f in H200_bwd_32_32 H200_fwd_16_48 H200_fwd_32_32; do
  echo "== $f"; grep "^| [A-Z0-9]" "$OUT/$f.md" 2>/dev/null | cut -c1-150 | tail -19
done
grep -h "^\[bench\]" /tmp/o_bwd/bench_bwd.log /tmp/o_16_48/bench_fwd.log /tmp/o_32_32/bench_fwd.log | grep shapes
