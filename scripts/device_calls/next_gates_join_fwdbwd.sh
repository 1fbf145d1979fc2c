#!/usr/bin/env bash
# (Written in the twentieth session for the next one; not yet run.) One GPU, about 480 s, HEAD's wheel in .carry/:
# the prep with its gates summed once for all v-heads before the loop (ablate spec prep4go, option gates_once; every
# output should be bitwise the default's) against the default at 32768 tokens; the chunk gradient without the
# warpgroups' join before the dq / dk stores (spec bwdcwsnj, option join=False; bitwise equal expected) against the
# default at 8192 tokens; then the training step with peers at (8, 24) (speed_plan Ready 3; never measured there).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 120 python3 benchmarks/ablate.py --kernels prep prep4go --variants cur \
  --tokens 32768 --heads 2,8 16,16 16,32 16,64 > "$OUT/ablate_prep_go.log" 2>&1
echo "prep go rc=$?"; grep -A9 "^kernel " "$OUT/ablate_prep_go.log" | cut -c1-150
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 120 python3 benchmarks/ablate.py --kernels bwdcws bwdcwsnj --variants cur \
  --heads 2,8 16,16 32,32 16,64 > "$OUT/ablate_bwdc_nj.log" 2>&1
echo "bwdc nj rc=$?"; grep -A9 "^kernel " "$OUT/ablate_bwdc_nj.log" | cut -c1-150
FQ_TMP=/tmp/g0 FQ_BENCH_TIMEOUT=360 OUT=/tmp/o_fb bash scripts/gpu_bench.sh --fwdbwd "--heads 8,24"
cp /tmp/o_fb/H200_fwdbwd.json "$OUT/H200_fwdbwd_8_24.json"; cp /tmp/o_fb/H200_fwdbwd.md "$OUT/H200_fwdbwd_8_24.md"
grep "^| [A-Z0-9]" "$OUT/H200_fwdbwd_8_24.md" | cut -c1-170 | tail -20; grep "^\[bench\]" /tmp/o_fb/bench_fwdbwd.log | tail -1
