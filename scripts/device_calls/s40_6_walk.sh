#!/usr/bin/env bash
# Fortieth session: the correction walk's step (benchmarks/walk_bench.py, TileLang's JIT from the carried peers):
# the wheel's variant (tma) against the products only on fallback segments (tmaskip), a 32-wide V slice (tma32) and
# both, and as diagnostics two products (M in bf16) and one (as FlashQLA's walk), with half of the heads on the
# fallback and with none; 8 v-heads, 16 segments of 8 chunks (the backward's
# plan at (4, 8) 1x8192). Then the backward's timeline in a CUDA-graph replay (s40_5_graph_timeline.sh).
# Needs .carry/flashqla-*.whl and .carry/peers.tar.xz. Not yet run (the 40th session's device time was spent).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_peers
export TILELANG_CACHE_DIR=/tmp/tl_cache
for fb in 4 0; do
  PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 200 python3 benchmarks/walk_bench.py --heads 8 --tokens 8192 \
    --seg-tokens 512 --fallback-heads $fb --variants tma tmaskip tma32 tma32skip tma2p tma1p 2>&1 | grep -v "Warning\|warn"
done
bash scripts/device_calls/s40_5_graph_timeline.sh
