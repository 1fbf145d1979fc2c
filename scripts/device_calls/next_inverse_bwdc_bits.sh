#!/usr/bin/env bash
# (Written in the nineteenth session for the next one; not yet run.) One GPU, about 300 s: the inverse's latency on a
# lone warpgroup over 16 repetitions (ablate spec prep16 at (1, 16), 132 chunks: one CTA per SM; per v-head
# (t(120) - t(127)) / 16 against the ~0.7 us budget of speed_plan's Forward next 1), then the chunk gradient's per-CTA
# work around its items (spec bwdcwsab: dq / dk stores, dv stores, Q and K loads, S0 and dS1 loads skipped) at one and
# four v-heads per group (speed_plan's Ready 8); then the prep's level-1 merge on per-warp TF32 mma.sync (spec prep4m1,
# option mma_level1), its diagonal 16x16 blocks from 8x8 ones (prep4d8, diag8) and both (prep4d8m1) against the
# default at 32768 tokens (A differs in rounding: its max |difference| is printed); and z_rs off again (prep4nz: in the
# nineteenth session tma_loads alone was 3% faster than with z_rs at (16, 64), 11% slower at (2, 8); a second look).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 120 python3 benchmarks/ablate.py --kernels prep16 --variants ablate \
  --heads 1,16 --tokens 8448 --masks 0 120 127 1 2 4 > "$OUT/ablate_inverse16.log" 2>&1
echo "inverse rc=$?"; grep "^prep16 " "$OUT/ablate_inverse16.log" | cut -c1-110
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 150 python3 benchmarks/ablate.py --kernels bwdcwsab --variants cur ablate \
  --heads 16,16 16,64 --masks 0 1 2 3 4 8 16 32 48 63 > "$OUT/ablate_bwdc_bits.log" 2>&1
echo "bwdc bits rc=$?"; grep "^bwdcwsab " "$OUT/ablate_bwdc_bits.log" | cut -c1-110
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 150 python3 benchmarks/ablate.py --kernels prep prep4m1 prep4d8 prep4d8m1 prep4nz \
  --variants cur --tokens 32768 --heads 2,8 16,16 16,32 16,64 > "$OUT/ablate_prep_m1.log" 2>&1
echo "prep m1 rc=$?"; grep -A25 "^kernel " "$OUT/ablate_prep_m1.log" | cut -c1-160
