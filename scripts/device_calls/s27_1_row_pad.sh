#!/usr/bin/env bash
# Twenty-seventh session, call 1: row_pad 8 (the fp32 C x C buffer's rows padded by 8 floats: its fragment stores
# conflict-free, its one transposed read 2-way) against 4 (shipped: stores 2-way) in the fused backward
# (fused_bwd_check.py: outputs against the pair, times) and in the chunk gradient of the two passes (ablate.py,
# interleaved: the shipped gmax 2 variant's parameters and the default's). JIT with the peers bundle's TileLang.
# About 300 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 200 python3 benchmarks/fused_bwd_check.py --heads 32 16 \
  --mixes 8192x4 1024x8 --params "{}" "dict(row_pad=8)" > "$OUT/row_pad_fused.log" 2>&1
echo "fused check rc=$?"; grep -v "TileLang\|^$" "$OUT/row_pad_fused.log" | tail -12
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 260 python3 benchmarks/ablate.py --kernels bwdcwsr2hg bwdcwsr2hgp8 \
  bwdcws bwdcwsp8 --variants cur --heads 16,32 2,8 16,64 --tokens 16384 --rounds 5 > "$OUT/row_pad_chunk.log" 2>&1
echo "ablate rc=$?"; grep -v "TileLang\|^$" "$OUT/row_pad_chunk.log" | tail -24 | cut -c1-160
