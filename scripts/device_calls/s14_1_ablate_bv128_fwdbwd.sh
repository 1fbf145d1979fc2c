#!/usr/bin/env bash
# Two GPUs: GPU0 ablate (lean_waits, dkk_in_wk) then BV=128 with kept states; GPU1 training steps with peers.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
echo "wheel commit: $(cat .carry/COMMIT)"; nvidia-smi --query-gpu=name --format=csv,noheader
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
python3 -m pip install -q --no-deps --no-index --target /tmp/site .carry/flashqla-*.whl 2>&1 | grep -v WARNING
(
  export CUDA_VISIBLE_DEVICES=0 PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1
  t0=$(date +%s)
  timeout 330 python3 benchmarks/ablate.py --kernels bwdc bwdcws bwdcwsl bwdcwsd bwdcwsdr --variants cur \
    --heads 2,8 16,32 16,64 32,128 > "$OUT/ablate.log" 2>&1
  echo "ablate rc=$? $(( $(date +%s) - t0 )) s" >> "$OUT/ablate.log"
  export PYTHONPATH=/tmp/site
  for bv in auto 64 128; do
    if [ $bv = auto ]; then unset FLASHQLA_FWD_BLOCK_V; else export FLASHQLA_FWD_BLOCK_V=$bv; fi
    echo "=== FLASHQLA_FWD_BLOCK_V=$bv"
    timeout 100 python3 benchmarks/profile_kernels.py --heads 2,8 16,32 16,64 --mixes 8192x4 1x32768 2>&1 | grep -v Warning
  done > "$OUT/bv128.log" 2>&1
) &
(
  export CUDA_VISIBLE_DEVICES=1
  OUT2="$OUT/b"; mkdir -p "$OUT2"
  for h in 16,64 2,8; do
    FQ_TMP=/tmp/g1 FQ_BENCH_TIMEOUT=265 OUT="$OUT2/$h" bash scripts/gpu_bench.sh --fwdbwd \
      "--heads $h --mixes 1x8192 1x32768 --libs flashqla,flashqla_keep,fla,flash_qla" > "$OUT/bench_$h.log" 2>&1
    cp "$OUT2/$h/H200_fwdbwd.json" "$OUT/fwdbwd_${h/,/_}.json" 2>/dev/null
  done
  tar cf "$OUT/bench_dirs.tar" -C "$OUT2" . && rm -rf "$OUT2"
) &
wait
tail -40 "$OUT/ablate.log"
grep -E "^===| ms of kernels|gdn_fwd" "$OUT/bv128.log" | head -90
for f in "$OUT"/bench_*.log; do echo "== $f"; cat "$f"; done
