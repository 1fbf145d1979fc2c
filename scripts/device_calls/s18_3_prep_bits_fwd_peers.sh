#!/usr/bin/env bash
# One GPU, c08f10c's wheel (TMA stores on): the chunk prep's ablation bits at 32768 tokens (where its time goes with A
# and Z by TMA), then the forward with peers at FQ_HEADS (default (16, 32) and (8, 32), 19 mixes each).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 100 python3 benchmarks/ablate.py --kernels prep --variants cur ablate \
  --tokens 32768 --heads 2,8 16,64 > "$OUT/ablate_prep_bits.log" 2>&1
echo "prep ablate rc=$?"; grep -A40 "^kernel " "$OUT/ablate_prep_bits.log" | cut -c1-100
heads=${FQ_HEADS:-16,32 8,32}
FQ_TMP=/tmp/g0 FQ_BENCH_TIMEOUT=${FQ_BENCH_TIMEOUT:-400} OUT=/tmp/o_fwd bash scripts/gpu_bench.sh --fwd "--heads $heads"
cp /tmp/o_fwd/H200_fwd.json /tmp/o_fwd/H200_fwd.md /tmp/o_fwd/bench_fwd.log "$OUT/" 2>/dev/null
grep "^| [0-9(]" "$OUT/H200_fwd.md" | cut -c1-160 | tail -45; tail -3 "$OUT/bench_fwd.log"
