#!/usr/bin/env bash
# One GPU, HEAD's wheel (the max_seqlen hint; the API passes the longest of cu_seqlens_cpu) and a1bdf84's: the GPU
# suite (the ops' schemas changed); the automatic plan with the hint at s21_4's 63 several-sequence shapes against that
# sweep's fastest forced plans; flashqla alone by wheel at unequal mixes (bench_gdn.py now passes cu_seqlens_cpu).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
install_ab_wheel a1bdf84
run_pytest "$OUT/pytest.log" 280 "not edge"
PYTHONPATH=/tmp/site timeout 100 python3 benchmarks/cp_sweep.py --heads 32,32 16,16 8,24 2,8 4,16 16,64 16,32 8,32 \
  16,48 --cp -1 --no-wide --hint --mixes 8192x4 4096x8 1024x8 16384+16384 28672+4096 8192+24576 12288+4096 \
  > "$OUT/auto_multi_hint.log" 2>&1
echo "multi hint rc=$?"
python3 scripts/device_calls/cp_auto_compare.py benchmarks/results/H200_cp_sweep_multi_a611c11.log \
  "$OUT/auto_multi_hint.log" | awk -F'|' 'NR == 1 || /geomean/ {print; next} {split($3, b, "/"); split($4, n, "/");
  if (n[1] / b[1] > 1.04 || n[2] / b[2] > 1.04) print}'
for c in a1bdf84 head; do
  site=/tmp/site_$c; [ $c = head ] && site=/tmp/site
  PYTHONPATH=$site timeout 90 python3 benchmarks/bench_gdn.py --mode fwd --libs flashqla --heads 16,48 8,24 \
    --mixes 28672+4096 24576+8192 8192+24576 12288+4096 1024+7168 1x16384 --json "$OUT/unequal_$c.json" \
    > "$OUT/unequal_$c.log" 2>&1
  echo "unequal $c rc=$?"
done
python3 scripts/device_calls/ms_table.py fwd "a1bdf84=$OUT/unequal_a1bdf84.json" "head=$OUT/unequal_head.json"
