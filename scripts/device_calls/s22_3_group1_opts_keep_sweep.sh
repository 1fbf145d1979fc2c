#!/usr/bin/env bash
# Two GPUs of one host (nvidia-h200-x2). GPU 0: the chunk gradient's options at one v-head per group ((16, 16),
# (32, 32); (16, 32) as a group-2 reference), where they were never measured (every earlier ablation ran at groups
# 2-4; at group 1 the chunk gradient costs 16.3 SM-us per (chunk, v-head) against 11.4 at (8, 24), s22_2's profile),
# JIT-compiled by ablate.py from this tree. GPU 1 (a993033's wheel): the backward reading the forward's kept chunk
# states against forced segment lengths (cp_sweep.py --keep), for the kept-states backward's warm-up share.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
g0() {
  mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
  CUDA_VISIBLE_DEVICES=0 PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 400 python3 benchmarks/ablate.py \
    --kernels bwdcws bwdcwsy bwdcwsl bwdcwsd bwdcwsdr bwdcwsnj bwdcwsr1 bwdcwsr2 bwdcwsr3 bwdcwsnh bwdcwst \
    --variants cur --tokens 16384 --heads 16,16 32,32 16,32 > "$OUT/ablate_group1.log" 2>&1
  echo "ablate rc=$?"
}
g1() {
  . scripts/device_calls/common.sh
  install_wheel
  CUDA_VISIBLE_DEVICES=1 PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 400 python3 benchmarks/cp_sweep.py --keep \
    --no-wide --heads 32,32 16,16 8,24 2,8 16,64 16,32 --mixes 1x2048 1x4096 1x8192 1x16384 1x32768 4096x4 \
    --cp -1 0 4 8 16 32 64 128 > "$OUT/cp_sweep_keep.log" 2>&1
  echo "keep sweep rc=$?"
}
g0 &
g1 &
wait
grep -A40 "^kernel " "$OUT/ablate_group1.log" | cut -c1-150
python3 scripts/device_calls/cp_sweep_summary.py "$OUT/cp_sweep_keep.log" | tail -30
