#!/usr/bin/env bash
# GPU0: the walk's variants at two segment lengths, then a training step with peers at (8,32); GPU1: (4,16).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
fwdbwd() {  # gpu heads timeout
  FQ_TMP=/tmp/g$1 FQ_BENCH_TIMEOUT=$3 OUT=/tmp/o_$2 bash scripts/gpu_bench.sh --fwdbwd \
    "--heads $2 --mixes 1x8192 1x32768 --libs flashqla,flashqla_keep,fla,flash_qla" > /tmp/b_$2.log 2>&1
  cp /tmp/o_$2/H200_fwdbwd.json "$OUT/fwdbwd_${2/,/_}.json" 2>/dev/null
}
(
  export CUDA_VISIBLE_DEVICES=0
  for seg in 2048; do
    PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 45 python3 benchmarks/walk_bench.py --seg-tokens $seg \
      --variants cur one_wait overlap tma 2>&1 | grep -v "TileLang\|INFO" > "$OUT/walk_$seg.log"
    echo "walk rc=$?" >> "$OUT/walk_$seg.log"
  done
  fwdbwd 0 8,32 255
) &
(
  export CUDA_VISIBLE_DEVICES=1
  fwdbwd 1 4,16 290
) &
wait
cat "$OUT"/walk_*.log
for h in 8,32 4,16; do grep -h "^| [0-9A-Za-z/]* TP\|\[bench\] [0-9]" /tmp/o_$h/H200_fwdbwd.md 2>/dev/null; tail -2 /tmp/b_$h.log; done
