#!/usr/bin/env bash
# Forty-fifth session, call 2: the register walk's step taken apart in walk_bench.py (TileLang's JIT from the tree, the
# carried peers' TileLang): the default 32-wide split walk, the register walk with E fetched after or before M, and the
# register walk without its products, without its store of S, without both (what the loads alone cost per step), and
# without both and M's low half (the step's time against the bytes it loads), at 4 v-heads all on the fallback (every
# step multiplies), one sequence of 32768 tokens (16 segments). Needs .carry/peers.tar.xz.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
install_peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout "${1:-330}" python3 benchmarks/walk_bench.py --heads 4 --tokens 32768 \
  --fallback-heads 4 --variants split32 rs rs_efirst rs_loads rs_nostore rs_loadsonly rs_loadshi > "$OUT/walk_bench.log" 2>&1
echo "walk_bench rc=$?"
grep -v "TileLang\|Warning\|^$" "$OUT/walk_bench.log" | tail -12 | cut -c1-160
