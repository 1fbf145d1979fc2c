#!/usr/bin/env bash
# One GPU: s22_4's chunk-gradient variants again, timed interleaved (ablate.py --rounds: every variant once per round,
# 7 rounds, after a second of warm-up; s22_4's kernel-major run drifted 4-6% between its first and last spec, the same
# kernel), with wa_async and join=False, at groups 1-4.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 400 python3 benchmarks/ablate.py --rounds 7 \
  --kernels bwdcwsb bwdcws bwdcwsr2 bwdcwsr4 bwdcwst bwdcwsr2t bwdcwsr4t bwdcwsy bwdcwsnj \
  --variants cur --tokens 16384 --heads 16,16 32,32 16,32 8,24 16,64 2,8 > "$OUT/ablate_interleaved.log" 2>&1
echo "ablate rc=$?"
grep -A60 "^kernel " "$OUT/ablate_interleaved.log" | cut -c1-100
