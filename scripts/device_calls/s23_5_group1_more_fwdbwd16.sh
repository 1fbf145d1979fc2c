#!/usr/bin/env bash
# Twenty-third session, fifth call. One GPU. The gmax 1 variant (prio_loads) with the options that might move its
# CTA's end or first steps (join=False, tma_dv, a 248 / 224 / 32 split, wa_async), ablate.py interleaved at one v-head
# per group; then e7e645b's training step with the peers at (16, 16), every mix.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 150 python3 benchmarks/ablate.py --rounds 5 \
  --kernels bwdcwspl bwdcwsplnj bwdcwsplt bwdcwsplr4 bwdcwsply --variants cur \
  --tokens 16384 --heads 16,16 32,32 > "$OUT/ablate_g1.log" 2>&1
echo "ablate rc=$?"; grep -A12 "^kernel " "$OUT/ablate_g1.log" | cut -c1-100
FQ_TMP=/tmp/g0 FQ_BENCH_TIMEOUT=360 OUT=/tmp/o_fb bash scripts/gpu_bench.sh --fwdbwd "--heads 16,16"
cp /tmp/o_fb/H200_fwdbwd.json "$OUT/H200_fwdbwd_16_16.json"; cp /tmp/o_fb/H200_fwdbwd.md "$OUT/H200_fwdbwd_16_16.md"
grep "^| [A-Z0-9]" "$OUT/H200_fwdbwd_16_16.md" | cut -c1-130 | tail -19; grep "^\[bench\]" /tmp/o_fb/bench_fwdbwd.log | tail -2
