#!/usr/bin/env bash
# One GPU, fe5d491's wheel (the prep's mma_level1 + diag8 on; diag8's zeros without the named barrier):
# compute-sanitizer over the prep (racecheck's hazards printed if any), the GPU suite, then the forward with peers at
# FQ_HEADS (default (16, 16), 19 mixes).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
mkdir -p /tmp/san
PYTHONPATH=/tmp/site FQ_SANITIZE_TOOLS="racecheck synccheck memcheck" FQ_SANITIZER_ARGS="--kernel-name kns=gdn_chunk_prep" \
  FQ_SANITIZE_TOOL_TIMEOUT=50 bash scripts/sanitize.sh /tmp/san
grep -m6 -A2 "Potential" /tmp/san/racecheck.log | cut -c1-200
run_pytest "$OUT/pytest.log" 220 "not edge"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
heads=${FQ_HEADS:-16,16}
FQ_TMP=/tmp/g0 FQ_BENCH_TIMEOUT=${FQ_BENCH_TIMEOUT:-230} OUT=/tmp/o_fwd bash scripts/gpu_bench.sh --fwd "--heads $heads"
cp /tmp/o_fwd/H200_fwd.json /tmp/o_fwd/H200_fwd.md "$OUT/" 2>/dev/null
grep "^| [0-9(A-Z]" "$OUT/H200_fwd.md" | cut -c1-170 | tail -26; tail -3 /tmp/o_fwd/bench_fwd.log
