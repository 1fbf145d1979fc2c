#!/usr/bin/env bash
# Thirty-third session, second call: the wheel whose gdn_fwd_noprep row ships p_split, log2_gates and solve_shfl
# (44d6467). GPU tests of gdn_prefill and of the no-gradient callers on it; noprep_check of the 32nd session's row
# against the shipped one and against it with l2_shfl (its NaN mended: the scratch block zeroed once); then (32, 32)
# beside FLA and FlashQLA on seven mixes. Needs the wheel and .carry/peers.tar.xz. About 450 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
cat .carry/COMMIT; nvidia-smi --query-gpu=name --format=csv,noheader
install_wheel
run_pytest "$OUT/pytest_prefill.log" 60 gpu tests/test_prefill_gpu.py
run_pytest "$OUT/pytest_edge.log" 120 gpu tests/test_edge_gpu.py tests/test_gdn_fwd_gpu.py tests/test_callers_gpu.py \
  tests/test_memory_gpu.py
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/site:/tmp/peers PYTHONUNBUFFERED=1 timeout 150 python3 benchmarks/noprep_check.py \
  --kernels fwdnp128k3x fwdnp128k3xpls fwdnp128k3xpls2 fwdnp128k3xs2 \
  --time 32,32:8192x4 32,32:4096x8 32,32:2048x4 32,32:8192x1 > "$OUT/noprep_check.log" 2>&1
echo "noprep_check rc=$?"; grep -v "TileLang\|^$\|Warning\|read before\|Initialize the" "$OUT/noprep_check.log" | tail -24 | cut -c1-200
PYTHONPATH=/tmp/site:/tmp/peers PYTHONUNBUFFERED=1 timeout 220 python3 benchmarks/bench_gdn.py --mode fwd --heads 32,32 \
  --mixes 8192x4 4096x8 2048x4 1024x8 16384+16384 4096+4096 1x8192 --libs flashqla,fla,flash_qla \
  --json "$OUT/peers_32_32.json" --md "$OUT/peers_32_32.md" > "$OUT/peers.log" 2>&1
echo "peers rc=$?"; grep "^| \|\[bench\]" "$OUT/peers_32_32.md" | cut -c1-170 | tail -10
