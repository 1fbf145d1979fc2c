#!/usr/bin/env bash
# For the thirty-third session (written in the thirty-second, not run): the forward at (32, 32), every mix, beside FLA
# and FlashQLA, on the shipped wheel (on an H200 if one comes: the prep-free kernel was measured on H100s only). Needs
# the wheel and .carry/peers.tar.xz. About 330 s (FlashQLA's first-use compiles).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
cat .carry/COMMIT; nvidia-smi --query-gpu=name --format=csv,noheader
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
pip install --no-deps --no-index --target /tmp/site .carry/flashqla-*.whl > "$OUT/pip.log" 2>&1 || tail -3 "$OUT/pip.log"
PYTHONPATH=/tmp/site:/tmp/peers PYTHONUNBUFFERED=1 timeout 420 python3 benchmarks/bench_gdn.py --mode fwd --heads 32,32 \
  --libs flashqla,fla,flash_qla --json "$OUT/fwd_32_32.json" --md "$OUT/fwd_32_32.md" > "$OUT/bench.log" 2>&1
echo "bench rc=$?"; grep "^| \|\[bench\]" "$OUT/fwd_32_32.md" | cut -c1-170 | tail -22
