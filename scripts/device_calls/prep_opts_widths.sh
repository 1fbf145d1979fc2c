#!/usr/bin/env bash
# (Written in the eighteenth session, run in the nineteenth: benchmarks/results/H200_prep_zld.md. A record: the specs
# prep4z / prep4ld / prep4zld / bwdcwsdl are gone, their options the defaults since.) One GPU, HEAD's wheel: the chunk prep's off
# options against the default (ablate.py, 32768 tokens, every output compared: z_rs, tma_loads, both), the chunk
# gradient's dl_rs against its default (8192 tokens), the inverse's latency on a lone warpgroup, then the
# training step and the forward, flashqla alone, at V-slice width automatic / 64 / 128 (FLASHQLA_FWD_BLOCK_V forces
# the forward and the backward's recompute alike), to see whether the h-storing pass's new ratio (1.23-1.44 with
# tma_h, against the width model's kChunkTimeBv128 = 1.75) leaves 128 faster where the model picks 64.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 150 python3 benchmarks/ablate.py --kernels prep prep4z prep4ld prep4zld \
  --variants cur --tokens 32768 --heads 2,8 16,16 16,32 16,64 > "$OUT/ablate_prep_opts.log" 2>&1
echo "prep ablate rc=$?"; grep -A40 "^kernel " "$OUT/ablate_prep_opts.log" | cut -c1-150
# the inverse's latency on one warpgroup (speed_plan, Forward next 1: the budget is about 0.7 us per chunk): the prep
# at (1, 4), 8192 tokens (128 CTAs: one per SM, 4 v-heads each) and 32768 (512: four per SM), doing everything (0),
# only the inverse and the gates (120 = 8 + 16 + 32 + 64 skipped), nothing but the gates (127); per v-head:
# (t(120) - t(127)) / 4
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 90 python3 benchmarks/ablate.py --kernels prep --variants ablate \
  --heads 1,4 --tokens 8192 --masks 0 120 127 1 2 4 > "$OUT/ablate_inverse_latency.log" 2>&1
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 60 python3 benchmarks/ablate.py --kernels prep --variants ablate \
  --heads 1,4 --tokens 32768 --masks 0 120 127 >> "$OUT/ablate_inverse_latency.log" 2>&1
echo "inverse latency rc=$?"; grep "^prep " "$OUT/ablate_inverse_latency.log" | cut -c1-100
# the chunk gradient's dl_rs (dL's second product from registers; every output compared)
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 120 python3 benchmarks/ablate.py --kernels bwdcws bwdcwsdl --variants cur \
  --heads 2,8 16,32 16,64 > "$OUT/ablate_bwdc_dl.log" 2>&1
echo "bwdc ablate rc=$?"; grep -A20 "^kernel " "$OUT/ablate_bwdc_dl.log" | cut -c1-250
for mode in fwdbwd fwd; do
  for bv in auto 64 128; do
    if [ $bv = auto ]; then unset FLASHQLA_FWD_BLOCK_V; else export FLASHQLA_FWD_BLOCK_V=$bv; fi
    PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 60 python3 benchmarks/bench_gdn.py --mode $mode --libs flashqla \
      --heads 2,8 16,32 16,64 --mixes 1x8192 1x32768 8192x4 4096x8 --json "$OUT/w_${mode}_$bv.json" \
      > "$OUT/w_${mode}_$bv.log" 2>&1
    echo "$mode bv=$bv rc=$?"
  done
done
unset FLASHQLA_FWD_BLOCK_V
for mode in fwdbwd fwd; do
  python3 scripts/device_calls/ms_table.py "$mode by width" auto="$OUT/w_${mode}_auto.json" 64="$OUT/w_${mode}_64.json" \
    128="$OUT/w_${mode}_128.json"
done
