#!/usr/bin/env bash
# For the thirty-third session's first call (written in the thirty-second, not run): gdn_fwd_noprep's untested options
# against the shipped row, JIT from the tree (noprep_check.py: correctness against the float64 recurrence, then time per
# shape): p_split (P's columns split between the math warpgroups), log2_gates (the cumsum in log2 units), solve_shfl
# (the solve's Y by shuffles: o should equal the shipped row's bit for bit) and all three; then the forward at
# (32, 32), every mix, beside FLA and FlashQLA (on an H200 if one comes). Needs the wheel and .carry/peers.tar.xz
# (bash ../shared/peers/make_bundle.sh .carry). About 450 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
cat .carry/COMMIT; nvidia-smi --query-gpu=name --format=csv,noheader
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
pip install --no-deps --no-index --target /tmp/site .carry/flashqla-*.whl > "$OUT/pip.log" 2>&1 || tail -3 "$OUT/pip.log"
PYTHONPATH=/tmp/site:/tmp/peers PYTHONUNBUFFERED=1 timeout 200 python3 benchmarks/noprep_check.py \
  --kernels fwdnp128k3x fwdnp128k3xp fwdnp128k3xl fwdnp128k3xs fwdnp128k3xpls \
  --time 32,32:8192x4 32,32:4096x8 32,32:2048x4 32,32:8192x1 > "$OUT/noprep_check.log" 2>&1
echo "noprep_check rc=$?"; grep -v "TileLang\|^$\|Warning\|read before\|Initialize the" "$OUT/noprep_check.log" | tail -24 | cut -c1-200
PYTHONPATH=/tmp/site:/tmp/peers PYTHONUNBUFFERED=1 timeout 330 python3 benchmarks/bench_gdn.py --mode fwd --heads 32,32 \
  --libs flashqla,fla,flash_qla --json "$OUT/fwd_32_32.json" --md "$OUT/fwd_32_32.md" > "$OUT/bench.log" 2>&1
echo "bench rc=$?"; grep "^| \|\[bench\]" "$OUT/fwd_32_32.md" | cut -c1-170 | tail -22
