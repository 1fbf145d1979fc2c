#!/usr/bin/env bash
# Forty-fifth session, call 3: the register walk with S_{j+1} stored without the TMA store (s45_2: the TMA store cost
# 1.7 us of the 2.84 us step; without it the step took 1.12): through out_s and the threads' 16-byte copies (rs_thr),
# from the registers (rs_direct), each also with E read into registers a step ahead (rs_egthr, rs_egdirect: the
# latter has no proxy fence left in its step), beside the default 32-wide split walk (with and without its store), the
# TMA-store register walk and the one without a store, in walk_bench.py (TileLang's JIT, compiles in parallel). 4
# v-heads all on the fallback, one sequence of 32768 tokens (16 segments), then 8 v-heads half on the fallback at 8192
# tokens (16 segments of 512). Needs .carry/peers.tar.xz.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
install_peers
VARIANTS="split32 split32_nostore rs rs_thr rs_direct rs_egthr rs_egdirect rs_nostore"
walk_bench_compile "$VARIANTS"
walk_bench_run "$VARIANTS" "${1:-300}" walk_bench.log --heads 4 --tokens 32768 --fallback-heads 4
walk_bench_run "$VARIANTS" 120 walk_bench8.log --heads 8 --tokens 8192 --seg-tokens 512
