#!/usr/bin/env bash
# Forty-fifth session, call 2: the register walk's step taken apart in walk_bench.py (TileLang's JIT from the tree, the
# carried peers' TileLang, the compiles in parallel first): the default 32-wide split walk; the register walk with E
# fetched after or before M, and with E read into registers a step ahead (M three steps ahead); the register walk
# without its products, without its store of S, without both (what the loads alone cost per step), without both and
# M's low half (the step's time against the bytes it loads), and the E-in-registers walk's loads alone. 4 v-heads, all
# on the fallback (every step multiplies), one sequence of 32768 tokens (16 segments). Needs .carry/peers.tar.xz.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
install_peers
VARIANTS="split32 rs rs_efirst rs_eg rs_loads rs_nostore rs_loadsonly rs_loadshi rs_egloads"
walk_bench_compile "$VARIANTS"
walk_bench_run "$VARIANTS" "${1:-300}" walk_bench.log --heads 4 --tokens 32768 --fallback-heads 4
