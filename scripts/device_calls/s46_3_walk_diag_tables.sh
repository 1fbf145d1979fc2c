#!/usr/bin/env bash
# Forty-sixth session, call 3: the register walk's step with its products kept (rs_nostore's SASS held 3 of its 24
# HGMMA: it timed the loads): rs_final (only the last state stored) and rs_noload (no loads after the first two
# steps) beside rs, rs_loadsonly, split32, split32_nostore and split32_d3 (M fetched two steps ahead), in
# walk_bench.py (TileLang's JIT). Then the wheel of 2d211f4 (the default split walk with m_depth = 3): the walk and CP
# GPU tests, and flashqla alone by wheel against 6f19fa3's (.carry/ab/6f19fa3.zip: m_depth = 2), backward and
# forward at the few-head shapes, 6f19fa3 before and after; on an H200 with time left the forward beside FLA and
# FlashQLA at (16, 64) (issue 4's card, with FlashInfer's published H200 times). Needs .carry/flashqla-*.whl,
# .carry/ab/6f19fa3.zip and .carry/peers.tar.xz. Under 10 minutes.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
T0=$(date +%s)
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$GPU"
install_peers
install_wheel
install_ab_wheel 6f19fa3
VARIANTS="split32 split32_d3 split32_nostore rs rs_final rs_noload rs_loadsonly"
walk_bench_compile "$VARIANTS"
walk_bench_run "$VARIANTS" 90 walk_bench.log --heads 4 --tokens 32768 --fallback-heads 4
echo "elapsed $(( $(date +%s) - T0 )) s"
run_pytest "$OUT/pytest_walks.log" 120 gpu tests/test_walk_split_gpu.py tests/test_cp_gpu.py
echo "elapsed $(( $(date +%s) - T0 )) s"
for mode in bwd fwd; do
  AB_TIMEOUT=45 ab_ratio_table $mode "4,8 2,4" "1x8192 1x32768 8192x4" old=/tmp/site_6f19fa3 d3=/tmp/site
done
echo "elapsed $(( $(date +%s) - T0 )) s"
walk_bench_run "$VARIANTS" 60 walk_bench8.log --heads 8 --tokens 8192 --seg-tokens 512
profile_walk_widths 1x32768 40
echo "elapsed $(( $(date +%s) - T0 )) s"
case "$GPU" in *H200*) peer_table fwd 16,64 150 "--libs flashqla,fla,flash_qla" ;; esac
echo "elapsed $(( $(date +%s) - T0 )) s"
