#!/usr/bin/env bash
# Two GPUs of one host (nvidia-h200-x2), a993033's wheel: on GPU 0 the kernels of the forward and the training step at
# (32, 32) and (8, 24) (profile_kernels.py, cu_seqlens_cpu passed: where the (32, 32) backward's 0.6-0.9x of FlashQLA
# goes, against a group of three), then the forward with peers at (32, 32) and (16, 32); on GPU 1 the training step
# with peers at (32, 32). About 470 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
g0() {
  CUDA_VISIBLE_DEVICES=0 FQ_TMP=/tmp/g0 FQ_BENCH_TIMEOUT=400 OUT=/tmp/o0 bash scripts/gpu_bench.sh \
    --profile "--heads 32,32 8,24 --mixes 1x8192 1024x8 8192x4 1x32768" --fwd "--heads 32,32 16,32" \
    > "$OUT/g0.log" 2>&1
  cp /tmp/o0/profile.log "$OUT/profile.log"
  cp /tmp/o0/H200_fwd.json "$OUT/H200_fwd_32_32_16_32.json"; cp /tmp/o0/H200_fwd.md "$OUT/H200_fwd_32_32_16_32.md"
}
g1() {
  CUDA_VISIBLE_DEVICES=1 FQ_TMP=/tmp/g1 FQ_BENCH_TIMEOUT=380 OUT=/tmp/o1 bash scripts/gpu_bench.sh \
    --fwdbwd "--heads 32,32" > "$OUT/g1.log" 2>&1
  cp /tmp/o1/H200_fwdbwd.json "$OUT/H200_fwdbwd_32_32.json"; cp /tmp/o1/H200_fwdbwd.md "$OUT/H200_fwdbwd_32_32.md"
}
g0 &
g1 &
wait
grep -h "^| [A-Z0-9]" "$OUT/H200_fwd_32_32_16_32.md" "$OUT/H200_fwdbwd_32_32.md" | grep -v "^| NVIDIA" | cut -c1-130
grep -h "^\[bench\]" /tmp/o0/bench_fwd.log /tmp/o1/bench_fwdbwd.log | grep shapes
