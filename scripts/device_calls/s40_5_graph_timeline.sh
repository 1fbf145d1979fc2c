#!/usr/bin/env bash
# Fortieth session: the backward's kernels in a CUDA-graph replay (profile_bwd_peers.py --timeline --graph), so the
# gaps between kernels are the GPU's: at (4, 8) 1x8192 the main stream's kernels sum to 0.263 ms of the 0.294 ms
# backward. Needs .carry/flashqla-*.whl. Not yet run (the 40th session's device time was spent; s40_6 calls it).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 90 python3 benchmarks/profile_bwd_peers.py --heads 4,8 2,4 8,16 \
  --mixes 1x8192 4096+4096 --libs flashqla --timeline --graph --top 0 2>&1 | grep -v "Warning\|warn" | cut -c1-120
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 60 python3 benchmarks/profile_bwd_peers.py --heads 4,8 \
  --mixes 1x8192 --libs flashqla --timeline --top 0 2>&1 | grep -v "Warning\|warn" | cut -c1-120
