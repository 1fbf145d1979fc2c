#!/usr/bin/env bash
# Forty-first session: the walk's proxy fence (16d624a) checked in walk_bench.py (TileLang's JIT from the tree: the
# variants that were off, with --detail), the new wheel's CP, stream and backward GPU tests, then flashqla alone:
# 70064b0's wheel (base), the new wheel (new: fallback_first on, the walk fenced), the new wheel with the 32-wide walk
# (FLASHQLA_WALK_BV=32), with the fork after the tables (FLASHQLA_BWD_FORK_AFTER_TABLES=1), with both, base again;
# backward at (4, 8), (2, 4), (8, 16), (16, 32), forward at the first three; the graph-replay timeline with both.
# Needs .carry/flashqla-*.whl (70064b0), .carry/ab/s41b.zip (16d624a's wheel), .carry/peers.tar.xz. About 5 minutes.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
install_ab_wheel s41b
install_peers
echo "new wheel: $(PYTHONPATH=/tmp/site_s41b python3 -c 'import flashqla; print(flashqla.build_manifest().get("source_commit"))')"
export TILELANG_CACHE_DIR=/tmp/tl_cache
for fb in 0 2; do
  PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 150 python3 benchmarks/walk_bench.py --heads 8 --tokens 8192 \
    --seg-tokens 512 --fallback-heads $fb --detail 3 --iters 50 --variants tma tma32 tmaskip tma32skip tma1p \
    > "$OUT/walk_fb$fb.log" 2>&1
  echo "== walk, fallback heads $fb: rc=$?"
  grep "us/launch\|off the" "$OUT/walk_fb$fb.log"
  grep "^  " "$OUT/walk_fb$fb.log" | grep -v "^  tma1p" | head -4 | cut -c1-160
done
PYTEST_SITE=/tmp/site_s41b run_pytest "$OUT/pytest_s41b.log" 200 gpu tests/test_cp_gpu.py tests/test_streams_gpu.py \
  tests/test_gdn_bwd_gpu.py tests/test_fused_groups_gpu.py tests/test_build_manifest.py
S=/tmp/site_s41b
MIXES="1x8192 4096+4096 1x32768 8192x4"
AB_TIMEOUT=60 ab_runs bwd "4,8 2,4 8,16 16,32" "$MIXES" base=/tmp/site new=$S w32=$S:FLASHQLA_WALK_BV=32 \
  tables=$S:FLASHQLA_BWD_FORK_AFTER_TABLES=1 both=$S:FLASHQLA_WALK_BV=32,FLASHQLA_BWD_FORK_AFTER_TABLES=1 base2=/tmp/site
AB_TIMEOUT=60 ab_runs fwd "4,8 2,4 8,16" "$MIXES" base=/tmp/site new=$S w32=$S:FLASHQLA_WALK_BV=32 base2=/tmp/site
FLASHQLA_WALK_BV=32 FLASHQLA_BWD_FORK_AFTER_TABLES=1 PYTHONPATH=$S PYTHONUNBUFFERED=1 timeout 60 \
  python3 benchmarks/profile_bwd_peers.py --heads 4,8 --mixes 1x8192 --libs flashqla --timeline --graph --top 0 2>&1 \
  | grep -v "Warning\|warn" | cut -c1-120
