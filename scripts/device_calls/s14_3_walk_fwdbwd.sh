#!/usr/bin/env bash
# GPU0: the correction walk's variants (JIT), then a training step with peers at (16,16); GPU1: training steps at (4,16), (8,32).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
fwdbwd() {  # gpu heads
  FQ_TMP=/tmp/g$1 FQ_BENCH_TIMEOUT=250 OUT=/tmp/o_$2 bash scripts/gpu_bench.sh --fwdbwd \
    "--heads $2 --mixes 1x8192 1x32768 --libs flashqla,flashqla_keep,fla,flash_qla" > /tmp/b_$2.log 2>&1
  cp /tmp/o_$2/H200_fwdbwd.json "$OUT/fwdbwd_${2/,/_}.json" 2>/dev/null
}
(
  export CUDA_VISIBLE_DEVICES=0
  PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 200 python3 benchmarks/walk_bench.py --variants cur t256 tma noprefetch \
    > "$OUT/walk.log" 2>&1
  echo "walk rc=$?" >> "$OUT/walk.log"
  fwdbwd 0 16,16
) &
(
  export CUDA_VISIBLE_DEVICES=1
  fwdbwd 1 4,16
  fwdbwd 1 8,32
) &
wait
grep -v "TileLang\|INFO" "$OUT/walk.log" | tail -12
for h in 16,16 4,16 8,32; do grep -h "^| [0-9A-Za-z/]* TP\|^| 2B\|\[bench\] [0-9]" /tmp/o_$h/bench_fwdbwd.log /tmp/o_$h/H200_fwdbwd.md 2>/dev/null | sort -u; tail -2 /tmp/b_$h.log; done
