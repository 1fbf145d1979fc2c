#!/usr/bin/env bash
# Forty-sixth session, call 2: the walks without the proxy fence's wait on their stores. First walk_bench.py's variants
# (s46_1_walk_fence.sh's set, TileLang's JIT), then the wheel of 1db41a9 (the split walk with store_late, the register
# walk with store="direct_late" and no proxy fence): its walk and CP GPU tests, its walks' kernel times at (2, 4)
# 1x32768, and the backward by wheel against 6b834e9's (the 45th session's default walk: .carry/ab/6b834e9.zip), the
# old wheel before and after; then, on an H200 with time left, the forward beside FLA and FlashQLA at (16, 64).
# Needs .carry/flashqla-*.whl, .carry/ab/6b834e9.zip and .carry/peers.tar.xz. Under 10 minutes.
# Its variants were removed in 6f19fa3 (no faster): run it at 1db41a9 (32044ba's kernels).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
T0=$(date +%s)
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$GPU"
install_peers
install_wheel
install_ab_wheel 6b834e9
VARIANTS="split32 split32_late split32_nostore rs rs_direct rs_dnf rs_dlate rs_dlate_nf rs_nostore rs_nostore_nf rs_egl rs_egldirect"
walk_bench_compile "$VARIANTS"
walk_bench_run "$VARIANTS" 120 walk_bench.log --heads 4 --tokens 32768 --fallback-heads 4
echo "elapsed $(( $(date +%s) - T0 )) s"
run_pytest "$OUT/pytest_walks.log" 150 gpu tests/test_walk_rs_gpu.py tests/test_walk_split_gpu.py tests/test_cp_gpu.py
profile_walk_widths 1x32768 40
echo "elapsed $(( $(date +%s) - T0 )) s"
AB_TIMEOUT=45 ab_ratio_table bwd "4,8 2,4" "1x8192 1x32768 8192x4" old=/tmp/site_6b834e9 new=/tmp/site \
  new_rs=/tmp/site:FLASHQLA_WALK_BV=64
echo "elapsed $(( $(date +%s) - T0 )) s"
walk_bench_run "$VARIANTS" 90 walk_bench8.log --heads 8 --tokens 8192 --seg-tokens 512
echo "elapsed $(( $(date +%s) - T0 )) s"
