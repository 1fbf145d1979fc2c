#!/usr/bin/env bash
# One GPU: the correction walk's variants (JIT, split_acc first run), then a training step with peers at (4,16).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 150 python3 benchmarks/walk_bench.py --variants cur tma split256 tmasplit \
  > "$OUT/walk.log" 2>&1
echo "walk rc=$?" >> "$OUT/walk.log"
grep -v "TileLang\|INFO" "$OUT/walk.log" | tail -8
h=4,16
FQ_TMP=/tmp/g0 FQ_BENCH_TIMEOUT=330 OUT=/tmp/o_$h bash scripts/gpu_bench.sh --fwdbwd \
  "--heads $h --mixes 1x8192 1x32768 --libs flashqla,flashqla_keep,fla,flash_qla" > "$OUT/bench_${h/,/_}.log" 2>&1
cp /tmp/o_$h/H200_fwdbwd.json /tmp/o_$h/H200_fwdbwd.md /tmp/o_$h/bench_fwdbwd.log "$OUT/" 2>/dev/null
grep -h "^|" /tmp/o_$h/H200_fwdbwd.md 2>/dev/null; tail -3 "$OUT/bench_${h/,/_}.log"
