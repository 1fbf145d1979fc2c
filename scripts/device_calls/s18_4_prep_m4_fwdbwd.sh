#!/usr/bin/env bash
# One GPU, c08f10c's wheel: the chunk prep at 4 CTAs per SM (min_blocks = 4: 128 registers, no spills since the TMA
# stores) against the default 3 (ablate.py, 32768 tokens), then a training step with the peers at FQ_HEADS
# (default (16, 16), not yet measured with them).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 110 python3 benchmarks/ablate.py --kernels prep prep4m4 --variants cur \
  --tokens 32768 --heads 2,8 16,16 16,32 16,64 > "$OUT/ablate_prep_m4.log" 2>&1
echo "prep ablate rc=$?"; grep -A40 "^kernel " "$OUT/ablate_prep_m4.log" | cut -c1-100
FQ_SKIP_TESTS=1 FQ_HEADS=${FQ_HEADS:-16,16} FQ_BENCH_TIMEOUT=${FQ_BENCH_TIMEOUT:-365} \
  bash scripts/device_calls/s15_4_tests_fwdbwd.sh
