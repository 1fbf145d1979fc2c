#!/usr/bin/env bash
# Written in the 39th session for the next: the backward beside FLA and FlashQLA at the published backward head
# configurations given (`s40_1_peers.sh 2,4` then `4,8`, `8,16`: no table at these since the cluster backward), eight
# mixes each, 330 s per cold head configuration (the peers' first-use compiles: FLA's autotuning about 60 s, FlashQLA's
# backward about 100 s), and the peers' compile caches returned as $OUT/peer_cache.tar when under 16 MiB (copied to
# .carry/peer_cache.tar, gpu_bench.sh unpacks them before the next call's runs, which then skip the compiles; the
# carry limit of 64 MB, with the 46 MB bundle and the 4.5 MB wheel, leaves about 13 MB for it). Needs
# .carry/flashqla-*.whl and .carry/peers.tar.xz.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
MIXES="--mixes 1x32768 1x8192 16384+16384 4096+4096 8192x4 4096x8 2048x4 1024x8"
for heads in "$@"; do
  FQ_SAVE_PEER_CACHE=1 peer_table bwd "$heads" 330 "--libs flashqla,fla,flash_qla $MIXES"
done
[ -f /tmp/o_bwd/peer_cache.tar ] && cp /tmp/o_bwd/peer_cache.tar "$OUT/" && echo "peer cache returned"
