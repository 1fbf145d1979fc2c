#!/usr/bin/env bash
# One GPU, the wheel with the prep's z_rs + tma_loads and the chunk gradient's dl_rs on: the GPU suite and the edge
# stage; then flashqla alone by wheel (09adab1: the eighteenth session's kernels; HEAD), one process each, forward and
# training step at (16, 64), (16, 32), (16, 16), (2, 8) x four mixes; then the training step's kernels at (16, 16),
# where the step is furthest behind FlashQLA (0.74x at 1x8192). 09adab1's wheel in .carry/ab/09adab1.zip.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
run_pytest "$OUT/pytest.log" 220 "not edge"
run_pytest "$OUT/pytest_edge.log" 110 edge
c=09adab1
install_ab_wheel $c
ln -sfn /tmp/site /tmp/site_head
for mode in fwd fwdbwd; do
  for c in 09adab1 head; do
    PYTHONPATH=/tmp/site_$c PYTHONUNBUFFERED=1 timeout 60 python3 benchmarks/bench_gdn.py --mode $mode --libs flashqla \
      --heads 16,64 16,32 16,16 2,8 --mixes 1x8192 1x32768 8192x4 4096x8 --json "$OUT/ab_${mode}_$c.json" \
      > "$OUT/ab_${mode}_$c.log" 2>&1
    echo "$mode $c rc=$?"
  done
done
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 60 python3 benchmarks/profile_kernels.py --heads 16,16 \
  --mixes 1x8192 1x32768 > "$OUT/profile_16_16.log" 2>&1
echo "profile rc=$?"; grep -v "^\s*$" "$OUT/profile_16_16.log" | cut -c1-160 | head -60
for mode in fwd fwdbwd; do
  python3 scripts/device_calls/ms_table.py $mode 09adab1="$OUT/ab_${mode}_09adab1.json" head="$OUT/ab_${mode}_head.json"
done
