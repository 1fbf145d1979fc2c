#!/usr/bin/env bash
# One GPU, HEAD's wheel (the segment model refit) and a1bdf84's (.carry/ab/a1bdf84.zip): the GPU suite on HEAD's; the
# automatic plan's forward / backward at the 56 shapes of s21_2's sweep on both wheels, HEAD's also with
# FLASHQLA_RECOMPUTE_FOLLOWS_DH=1, against that sweep's fastest forced plans; flashqla alone by wheel (ab_flashqla).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
install_ab_wheel a1bdf84
run_pytest "$OUT/pytest.log" 280 "not edge"
SHAPES=(--heads 32,32 16,16 8,24 2,8 4,16 16,64 16,32 8,32 --mixes 1x2048 1x4096 1x8192 1x16384 1x32768 2048x4 4096x4
  --cp -1 --no-wide)
PYTHONPATH=/tmp/site_a1bdf84 timeout 100 python3 benchmarks/cp_sweep.py "${SHAPES[@]}" > "$OUT/auto_a1bdf84.log" 2>&1
echo "old rc=$?"
PYTHONPATH=/tmp/site timeout 100 python3 benchmarks/cp_sweep.py "${SHAPES[@]}" > "$OUT/auto_head.log" 2>&1
echo "head rc=$?"
FLASHQLA_RECOMPUTE_FOLLOWS_DH=1 PYTHONPATH=/tmp/site timeout 100 python3 benchmarks/cp_sweep.py "${SHAPES[@]}" \
  > "$OUT/auto_head_follow.log" 2>&1
echo "head follow rc=$?"
python3 scripts/device_calls/cp_auto_compare.py benchmarks/results/H200_cp_sweep_a1bdf84.log "$OUT/auto_a1bdf84.log" \
  "$OUT/auto_head.log" "$OUT/auto_head_follow.log"
ab_flashqla "32,32 8,24 2,8" a1bdf84
