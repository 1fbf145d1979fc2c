#!/usr/bin/env bash
# Thirty-third session, last device time: gdn_fwd_noprep's solve_eye (the 8x8 solves' identity from shared memory,
# so that ptxas no longer spills the loop-hoisted identity and reloads it on the solve's chain) against the shipped
# row, JIT from the tree (noprep_check.py: float64, bit for bit against the shipped row, time). Needs the wheel and
# .carry/peers.tar.xz (TileLang). About 130 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
nvidia-smi --query-gpu=name --format=csv,noheader
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/site:/tmp/peers PYTHONUNBUFFERED=1 timeout 200 python3 benchmarks/noprep_check.py \
  --kernels fwdnp128k3xpls fwdnp128k3xplse \
  --time 32,32:8192x4 32,32:4096x8 32,32:2048x4 32,32:8192x1 > "$OUT/noprep_check.log" 2>&1
echo "noprep_check rc=$?"; grep -v "TileLang\|^$\|Warning\|read before\|Initialize the" "$OUT/noprep_check.log" | tail -16 | cut -c1-200
