#!/usr/bin/env bash
# For the thirty-second session's first call (written in the thirty-first, not run): the forward with gdn_prefill's
# prep-free kernel against the peers on the H200 (it was measured on H100s only, flashqla alone), then the kernel with
# the solve's scratch in its own buffer (own_scratch) against the shipped row. Needs the wheel and the peers bundle in
# .carry (bash ../shared/peers/make_bundle.sh .carry); about 420 s (the peers' first-use compiles).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
cat .carry/COMMIT; nvidia-smi --query-gpu=name --format=csv,noheader
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
pip install --no-deps --no-index --target /tmp/site .carry/flashqla-*.whl > "$OUT/pip.log" 2>&1 || tail -3 "$OUT/pip.log"
PYTHONPATH=/tmp/site:/tmp/peers PYTHONUNBUFFERED=1 timeout 330 python3 benchmarks/bench_gdn.py --mode fwd --heads 32,32 \
  --json "$OUT/H200_fwd_32_32.json" --md "$OUT/H200_fwd_32_32.md" > "$OUT/bench.log" 2>&1
echo "bench rc=$?"; grep "^| \|\[bench\]" "$OUT/H200_fwd_32_32.md" | cut -c1-160 | tail -22
PYTHONPATH=/tmp/site:/tmp/peers PYTHONUNBUFFERED=1 timeout 200 python3 benchmarks/noprep_check.py \
  --kernels fwdnp128 fwdnp128s --time 32,32:8192x4 32,32:4096x8 32,32:8192x1 > "$OUT/noprep_check.log" 2>&1
echo "noprep_check rc=$?"; grep -v "TileLang\|^$\|Warning\|read before\|Initialize the" "$OUT/noprep_check.log" | tail -14 | cut -c1-200
