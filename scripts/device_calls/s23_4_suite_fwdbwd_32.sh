#!/usr/bin/env bash
# Twenty-third session, fourth call (no two-GPU host lent). One GPU, e7e645b's wheel (the chunk gradient's gmax 1
# variant): the GPU suite without the edge stage, then the training step with the peers at (32, 32), every mix.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
run_pytest "$OUT/pytest.log" 170 "not edge"
FQ_TMP=/tmp/g0 FQ_BENCH_TIMEOUT=360 OUT=/tmp/o_fb bash scripts/gpu_bench.sh --fwdbwd "--heads 32,32"
cp /tmp/o_fb/H200_fwdbwd.json "$OUT/H200_fwdbwd_32_32.json"; cp /tmp/o_fb/H200_fwdbwd.md "$OUT/H200_fwdbwd_32_32.md"
grep "^| [A-Z0-9]" "$OUT/H200_fwdbwd_32_32.md" | cut -c1-130 | tail -19; grep "^\[bench\]" /tmp/o_fb/bench_fwdbwd.log | tail -2
