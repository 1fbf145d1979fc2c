#!/usr/bin/env bash
# Forty-first session: the backward's recompute forked after the state gradient's warm-up pass (a9f841f; s40_5's graph
# replay at (4, 8) 1x8192: the two warm-up passes shared the SMs, 58.6 us for the backward's, and the reverse walk
# ran beside the recompute's states pass, 71.8 us against 63 alone) with fallback_first on. The new wheel's stream,
# CP and backward GPU tests; flashqla alone, backward: 70064b0's wheel (base), the new wheel (new), the new wheel
# with the old fork (FLASHQLA_BWD_RECOMPUTE_FIRST=1: fallback_first alone), base again; the training step the same
# at (4, 8) and (16, 32); the new wheel's graph-replay timeline at (4, 8) 1x8192; the walk diagnostic (s41_2).
# Needs .carry/flashqla-*.whl (70064b0), .carry/ab/s41.zip (a9f841f's wheel), .carry/peers.tar.xz. About 8 minutes.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
install_ab_wheel s41
echo "new wheel: $(PYTHONPATH=/tmp/site_s41 python3 -c 'import flashqla; print(flashqla.build_manifest().get("source_commit"))')"
PYTEST_SITE=/tmp/site_s41 run_pytest "$OUT/pytest_s41.log" 200 gpu tests/test_streams_gpu.py tests/test_cp_gpu.py \
  tests/test_gdn_bwd_gpu.py tests/test_fused_groups_gpu.py tests/test_build_manifest.py
MIXES="1x8192 4096+4096 1x32768 8192x4"
AB_TIMEOUT=60 ab_runs bwd "4,8 2,4 8,16 16,32" "$MIXES" base=/tmp/site new=/tmp/site_s41 \
  first=/tmp/site_s41:FLASHQLA_BWD_RECOMPUTE_FIRST=1 base2=/tmp/site
AB_TIMEOUT=60 ab_runs fwdbwd "4,8 16,32" "$MIXES" base=/tmp/site new=/tmp/site_s41 base2=/tmp/site
PYTHONPATH=/tmp/site_s41 PYTHONUNBUFFERED=1 timeout 60 python3 benchmarks/profile_bwd_peers.py --heads 4,8 \
  --mixes 1x8192 --libs flashqla --timeline --graph --top 0 2>&1 | grep -v "Warning\|warn" | cut -c1-120
bash scripts/device_calls/s41_2_walk_diag.sh
