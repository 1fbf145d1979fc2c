#!/usr/bin/env bash
# Forty-first session: where the walk variants tma32 (a 32-wide V slice) and tmaskip (products only on fallback
# segments) leave the float64 walk (s40_6: tma32 off with no head on the fallback, where the products are discarded
# and the states are E's copies; tmaskip off with half of the heads on the fallback; the diagnostic tma1p off in one
# direction only, so possibly a race): each variant's elements off, by slot, head, rows and columns, over three
# launches per direction; then compute-sanitizer's racecheck and synccheck on tma32 at 4 segments.
# Needs .carry/peers.tar.xz (TileLang's JIT). About 2 minutes.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_peers
export TILELANG_CACHE_DIR=/tmp/tl_cache
for fb in 0 4; do
  PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 150 python3 benchmarks/walk_bench.py --heads 8 --tokens 8192 \
    --seg-tokens 512 --fallback-heads $fb --detail 3 --iters 20 --variants tma tma32 tmaskip tma1p \
    > "$OUT/walk_diag_fb$fb.log" 2>&1
  echo "== fallback heads $fb rc=$?"
  grep "us/launch\|off the" "$OUT/walk_diag_fb$fb.log"
  for v in tma tma32 tmaskip tma1p; do
    grep "^  $v rev" "$OUT/walk_diag_fb$fb.log" | head -5 | cut -c1-180
    echo "   ($v: $(grep -c "^  $v rev" "$OUT/walk_diag_fb$fb.log") slot reports)"
  done
done
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in racecheck synccheck; do
  PYTHONPATH=/tmp/peers timeout 150 "$san" --tool $tool --print-limit 20 python3 benchmarks/walk_bench.py --heads 2 \
    --tokens 2048 --seg-tokens 512 --fallback-heads 0 --iters 1 --variants tma32 > "$OUT/san_$tool.log" 2>&1
  echo "== $tool rc=$?"
  grep -E "SUMMARY|Race|Error|Warning: .*hazard|us/launch" "$OUT/san_$tool.log" | head -8 | cut -c1-200
done
