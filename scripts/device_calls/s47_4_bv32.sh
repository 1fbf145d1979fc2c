#!/usr/bin/env bash
# Forty-seventh session, call 4 (ran on an H100 late in the session; benchmarks/results/s47/README.md): the fused forward
# at a 32-wide V slice (gdn_fwd.py BV = 32, four CTAs per head and segment; at d356654 only where
# FLASHQLA_FWD_BLOCK_V=32 forces it, since 1d6a68a also where the plan takes it).
# First its GPU tests (tests/test_fwd_block_v_gpu.py: every width against float64 and against BV = 64, with context
# parallelism, and the backward through each width), then flashqla alone, the default plan against BV = 32 forced, the
# default again (ab_ratio_table): the forward at the shapes where one segment per sequence leaves half the SMs idle at
# BV = 64 ((32, 32), (16, 32), (8, 24) single sequences of 2048-8192 tokens: 48-64 CTAs), then few-head multi-sequence
# and context-parallel ones, then the training step (the backward's state recompute at the forced width too). Needs
# .carry/flashqla-*.whl (built with the BV = 32 row), .carry/COMMIT and .carry/peers.tar.xz. About 7 minutes.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader
install_wheel
run_pytest "$OUT/pytest_bv32.log" 150 gpu tests/test_fwd_block_v_gpu.py
echo "elapsed $(( $(date +%s) - T0 )) s"
# the kernel alone (TileLang's JIT from the carried peers): us per chunk at BV = 32 against 64, one 8192-token sequence
install_peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 150 python3 benchmarks/ablate.py --kernels fwd_soth fwd32_soth \
  --variants cur --heads 32,32 16,16 2,8 --tokens 8192 --rounds 5 > "$OUT/ablate_bv32.log" 2>&1
echo "ablate rc=$?"; grep -v "TileLang\|^$\|Warning" "$OUT/ablate_bv32.log" | tail -12 | cut -c1-160
echo "elapsed $(( $(date +%s) - T0 )) s"
AB_TIMEOUT=60 ab_ratio_table fwd "32,32 16,32 8,24" "1x8192 1x4096 1x2048" plan=/tmp/site \
  bv32=/tmp/site:FLASHQLA_FWD_BLOCK_V=32
echo "elapsed $(( $(date +%s) - T0 )) s"
AB_TIMEOUT=60 ab_ratio_table fwd "2,8 16,16 4,16" "8192x4 2048x4 4096+4096 1x32768" plan=/tmp/site \
  bv32=/tmp/site:FLASHQLA_FWD_BLOCK_V=32
echo "elapsed $(( $(date +%s) - T0 )) s"
AB_TIMEOUT=90 ab_ratio_table fwdbwd "32,32 16,32" "1x8192 1x2048" plan=/tmp/site bv32=/tmp/site:FLASHQLA_FWD_BLOCK_V=32
echo "elapsed $(( $(date +%s) - T0 )) s"
