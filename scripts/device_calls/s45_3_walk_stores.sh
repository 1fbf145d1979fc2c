#!/usr/bin/env bash
# Forty-fifth session, call 3: the register walk with S_{j+1} stored without the TMA store (s45_2: the TMA store cost
# 1.7 us of the 2.84 us step; without it the step took 1.12): through out_s and the threads' 16-byte copies (rs_thr),
# from the registers (rs_direct), each also with E read into registers a step ahead (rs_egthr, rs_egdirect: the
# latter has no proxy fence left in its step), beside the default 32-wide split walk, the TMA-store register walk and
# the one without a store (and the default without its store), in walk_bench.py (TileLang's JIT, compiles in parallel). 4 v-heads all on the fallback, one
# sequence of 32768 tokens (16 segments), then 8 v-heads half on the fallback at 8192 tokens (16 segments of 512).
# Needs .carry/peers.tar.xz.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
install_peers
VARIANTS="split32 split32_nostore rs rs_thr rs_direct rs_egthr rs_egdirect rs_nostore"
T0=$(date +%s)
for v in $VARIANTS; do  # the JIT compiles in parallel, into TileLang's cache
  PYTHONPATH=/tmp/peers timeout 200 python3 benchmarks/walk_bench.py --compile-only --variants "$v" \
    > "$OUT/compile_$v.log" 2>&1 &
done
wait
echo "compiled in $(( $(date +%s) - T0 )) s: $(cat "$OUT"/compile_*.log | grep -c ': compiled') of $(echo $VARIANTS | wc -w)"
# shellcheck disable=SC2086
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout "${1:-300}" python3 benchmarks/walk_bench.py --heads 4 --tokens 32768 \
  --fallback-heads 4 --variants $VARIANTS > "$OUT/walk_bench.log" 2>&1
echo "walk_bench rc=$?"
grep -v "TileLang\|Warning\|^$" "$OUT/walk_bench.log" | tail -12 | cut -c1-160
# shellcheck disable=SC2086
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 120 python3 benchmarks/walk_bench.py --heads 8 --tokens 8192 \
  --seg-tokens 512 --variants $VARIANTS > "$OUT/walk_bench8.log" 2>&1
echo "walk_bench (8 heads, 8192 tokens) rc=$?"
grep -v "TileLang\|Warning\|^$" "$OUT/walk_bench8.log" | tail -10 | cut -c1-160
for v in $VARIANTS; do grep -q ": compiled" "$OUT/compile_$v.log" || { echo "== $v"; tail -5 "$OUT/compile_$v.log"; }; done
