#!/usr/bin/env bash
# Written in the 39th session for the next: s38_2_peers.sh (the backward beside FLA and FlashQLA at the published
# backward head configurations given, `s40_1_peers.sh 2,4` then `4,8`, `8,16`: no table at these since the cluster
# backward; 330 s per cold head configuration) with the peers' compile caches returned as $OUT/peer_cache.tar when
# under 16 MiB (copied to .carry/peer_cache.tar, gpu_bench.sh unpacks them before the next call's runs, which then
# skip the compiles; the carry limit of 64 MB, with the 46 MB bundle and the 4.5 MB wheel, leaves about 13 MB for it).
# Needs .carry/flashqla-*.whl and .carry/peers.tar.xz.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
FQ_SAVE_PEER_CACHE=1 OUT="$OUT" bash scripts/device_calls/s38_2_peers.sh "$@"
[ -f /tmp/o_bwd/peer_cache.tar ] && cp /tmp/o_bwd/peer_cache.tar "$OUT/" && echo "peer cache returned"
