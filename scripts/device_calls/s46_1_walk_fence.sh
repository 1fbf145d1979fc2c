#!/usr/bin/env bash
# Forty-sixth session, call 1: the proxy fence after the stores. `fence.proxy.async.shared::cta` lowers to
# MEMBAR.ALL.CTA + FENCE.VIEW.ASYNC.S, and the register walk's direct stores of S_{j+1} sit right before it (the
# default split walk's store before the next step's fence): the membar waits for the stores to complete. Variants
# (walk_bench.py): the stores after the fence (rs_dlate, split32_late), no fence where the threads write no shared
# memory (rs_dnf, rs_dlate_nf, rs_nostore_nf), E's loads into registers after the products (rs_egl, rs_egldirect),
# beside s45's split32, split32_nostore, rs, rs_direct, rs_nostore. Needs .carry/peers.tar.xz.
# Its variants were removed in 6f19fa3 (no faster): run it at 32044ba. Never ran as such (no machine came); s46_2
# ran its walk_bench part.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
install_peers
VARIANTS="split32 split32_late split32_nostore rs rs_direct rs_dnf rs_dlate rs_dlate_nf rs_nostore rs_nostore_nf rs_egl rs_egldirect"
walk_bench_compile "$VARIANTS"
walk_bench_run "$VARIANTS" "${1:-200}" walk_bench.log --heads 4 --tokens 32768 --fallback-heads 4
walk_bench_run "$VARIANTS" 120 walk_bench8.log --heads 8 --tokens 8192 --seg-tokens 512
