#!/usr/bin/env bash
# One GPU (the machine of s19_5, still warm), 98b49a0's wheel: the forward with peers at (16, 48), then the training
# step with peers at (32, 32).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
FQ_TMP=/tmp/g0 FQ_BENCH_TIMEOUT=190 OUT=/tmp/o_fwd48 bash scripts/gpu_bench.sh --fwd "--heads 16,48"
cp /tmp/o_fwd48/H200_fwd.json "$OUT/H200_fwd_16_48.json"; cp /tmp/o_fwd48/H200_fwd.md "$OUT/H200_fwd_16_48.md"
grep "^\[bench\]" /tmp/o_fwd48/bench_fwd.log | tail -1
FQ_TMP=/tmp/g0 FQ_BENCH_TIMEOUT=320 OUT=/tmp/o_fb32 bash scripts/gpu_bench.sh --fwdbwd "--heads 32,32"
cp /tmp/o_fb32/H200_fwdbwd.json "$OUT/H200_fwdbwd_32_32.json"; cp /tmp/o_fb32/H200_fwdbwd.md "$OUT/H200_fwdbwd_32_32.md"
grep "^| [0-9(A-Z]" "$OUT/H200_fwdbwd_32_32.md" | cut -c1-170 | tail -12; tail -2 /tmp/o_fb32/bench_fwdbwd.log
