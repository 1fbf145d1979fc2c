#!/usr/bin/env bash
# One GPU: the 128-wide fused forward's ablation bits (ablate.py --variants ablate, JIT: where its 3.1 us chunk goes
# now), then the forward with peers (FLA, FlashQLA; FlashInfer's published times) at FQ_HEADS (default (2, 8) and
# (4, 16), all 19 mixes each) on main's kernels (the sixteenth session's).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 110 python3 benchmarks/ablate.py --kernels fwd128 \
  --variants cur ablate --heads 2,8 16,64 > "$OUT/ablate_fwd128_bits.log" 2>&1
echo "ablate rc=$?" >> "$OUT/ablate_fwd128_bits.log"
grep -h "^fwd\|rc=" "$OUT/ablate_fwd128_bits.log" | cut -c1-100
heads=${FQ_HEADS:-2,8 4,16}
FQ_TMP=/tmp/g0 FQ_BENCH_TIMEOUT=${FQ_BENCH_TIMEOUT:-400} OUT=/tmp/o_fwd bash scripts/gpu_bench.sh --fwd "--heads $heads"
cp /tmp/o_fwd/H200_fwd.json /tmp/o_fwd/H200_fwd.md /tmp/o_fwd/bench_fwd.log "$OUT/" 2>/dev/null
tail -3 "$OUT/bench_fwd.log"
