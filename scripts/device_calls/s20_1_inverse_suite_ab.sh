#!/usr/bin/env bash
# One GPU, a4393e2's wheel (the prep's mma_level1 + diag8 on for the sm90 family): the GPU suite and the edge stage
# (A's error against float64 with the TF32 merges), compute-sanitizer over the prep (racecheck, synccheck, memcheck),
# then flashqla alone by wheel (98b49a0: the nineteenth session's kernels; HEAD), forward and training step at
# (16, 64), (16, 32), (16, 16), (2, 8) x four mixes. 98b49a0's wheel in .carry/ab/98b49a0.zip.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
run_pytest "$OUT/pytest.log" 220 "not edge"
run_pytest "$OUT/pytest_edge.log" 100 edge
mkdir -p /tmp/san
PYTHONPATH=/tmp/site FQ_SANITIZE_TOOLS="racecheck synccheck memcheck" FQ_SANITIZER_ARGS="--kernel-name kns=gdn_chunk_prep" \
  FQ_SANITIZE_TOOL_TIMEOUT=50 bash scripts/sanitize.sh /tmp/san
c=98b49a0
install_ab_wheel $c
ln -sfn /tmp/site /tmp/site_head
for mode in fwd fwdbwd; do
  for c in 98b49a0 head; do
    PYTHONPATH=/tmp/site_$c PYTHONUNBUFFERED=1 timeout 60 python3 benchmarks/bench_gdn.py --mode $mode --libs flashqla \
      --heads 16,64 16,32 16,16 2,8 --mixes 1x8192 1x32768 8192x4 4096x8 --json "$OUT/ab_${mode}_$c.json" \
      > "$OUT/ab_${mode}_$c.log" 2>&1
    echo "$mode $c rc=$?"
  done
done
for mode in fwd fwdbwd; do
  python3 scripts/device_calls/ms_table.py $mode 98b49a0="$OUT/ab_${mode}_98b49a0.json" head="$OUT/ab_${mode}_head.json"
done
