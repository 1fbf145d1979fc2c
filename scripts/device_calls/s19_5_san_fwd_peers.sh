#!/usr/bin/env bash
# One GPU, 98b49a0's wheel (its kernels are HEAD's defaults: the prep's z_rs + tma_loads, the chunk gradient's dl_rs;
# the items walk is off): compute-sanitizer (racecheck, synccheck, memcheck) over every flashqla kernel, then the
# forward with peers at FQ_HEADS (default (32, 32), 19 mixes).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
run_sanitizer /tmp/san gdn_ 80
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
heads=${FQ_HEADS:-32,32}
FQ_TMP=/tmp/g0 FQ_BENCH_TIMEOUT=${FQ_BENCH_TIMEOUT:-250} OUT=/tmp/o_fwd bash scripts/gpu_bench.sh --fwd "--heads $heads"
cp /tmp/o_fwd/H200_fwd.json /tmp/o_fwd/H200_fwd.md /tmp/o_fwd/bench_fwd.log "$OUT/" 2>/dev/null
grep "^| [0-9(]" "$OUT/H200_fwd.md" | cut -c1-160 | tail -25; tail -3 "$OUT/bench_fwd.log"
