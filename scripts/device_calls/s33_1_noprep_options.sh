#!/usr/bin/env bash
# For the thirty-third session's first call (written in the thirty-second, not run): gdn_fwd_noprep's untested options
# against the shipped row, JIT from the tree (noprep_check.py: correctness against the float64 recurrence, each
# kernel's outputs against the first's bit for bit, then time per shape): p_split (P's columns split between the math
# warpgroups), log2_gates (the cumsum in log2 units), solve_shfl (the solve's Y by shuffles: o should equal the
# shipped row's bit for bit), with l2_shfl (the level-2 merge too: TF32 products summed in another order), and all of
# them. Needs the wheel and .carry/peers.tar.xz (bash ../shared/peers/make_bundle.sh .carry; TileLang for the JIT
# builds). About 400 s; s33_2 then runs the forward table with the peers.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
nvidia-smi --query-gpu=name --format=csv,noheader
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/site:/tmp/peers PYTHONUNBUFFERED=1 timeout 480 python3 benchmarks/noprep_check.py \
  --kernels fwdnp128k3x fwdnp128k3xp fwdnp128k3xl fwdnp128k3xs fwdnp128k3xs2 fwdnp128k3xpls2 \
  --time 32,32:8192x4 32,32:4096x8 32,32:2048x4 32,32:8192x1 > "$OUT/noprep_check.log" 2>&1
echo "noprep_check rc=$?"; grep -v "TileLang\|^$\|Warning\|read before\|Initialize the" "$OUT/noprep_check.log" | tail -34 | cut -c1-220
