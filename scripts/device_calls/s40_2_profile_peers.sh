#!/usr/bin/env bash
# Fortieth session: the backward kernel by kernel beside FlashQLA's (benchmarks/profile_bwd_peers.py) at the few-head
# published backward configurations where flashqla is 0.94-0.95x FlashQLA (s40_1: (2, 4), (4, 8)), then the (8, 16)
# peer table (s38_2_peers.sh). FlashQLA compiles its backward for about 80 s per head configuration on first use.
# Needs .carry/flashqla-*.whl and .carry/peers.tar.xz.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
install_peers
export TILELANG_CACHE_DIR=/tmp/g0/peer_cache/tilelang TRITON_CACHE_DIR=/tmp/g0/peer_cache/triton
PYTHONPATH=/tmp/site:/tmp/peers PYTHONUNBUFFERED=1 timeout 260 python3 benchmarks/profile_bwd_peers.py \
  --heads 4,8 2,4 --mixes 1x8192 4096+4096 1x32768 --libs flashqla,flash_qla 2>&1 | grep -v "Warning\|TileLang" \
  > "$OUT/profile_bwd_peers.log"
echo "profile rc=$?"; cut -c1-140 "$OUT/profile_bwd_peers.log"
[ "${1:-}" = table ] && peer_table bwd 8,16 300 \
  "--libs flashqla,fla,flash_qla --mixes 1x32768 1x8192 16384+16384 4096+4096 8192x4 4096x8 2048x4 1024x8"
