#!/usr/bin/env bash
# One GPU, fc30405's wheel: the GPU suite without the edge stage, then the forward with peers at (8, 32) (its last
# table is c08f10c's).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
run_pytest "$OUT/pytest.log" 245 "not edge"
FQ_TMP=/tmp/g0 FQ_BENCH_TIMEOUT=185 OUT=/tmp/o_f bash scripts/gpu_bench.sh --fwd "--heads 8,32"
cp /tmp/o_f/H200_fwd.json "$OUT/H200_fwd_8_32.json"; cp /tmp/o_f/H200_fwd.md "$OUT/H200_fwd_8_32.md"
grep "^| [A-Z0-9]" "$OUT/H200_fwd_8_32.md" | cut -c1-150 | tail -19; grep "^\[bench\]" /tmp/o_f/bench_fwd.log | tail -1
