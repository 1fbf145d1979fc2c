#!/usr/bin/env bash
# Twenty-fifth session: the wheel of .carry/COMMIT with the fused backward in groups of v-heads (the group's CTAs add
# dq, dk by reductions in L2, in v-head order from the third on, 165370a): its GPU tests and the backward's against
# float64, then flashqla alone by setting in one wheel (FLASHQLA_FUSED_BWD 0 / 1 / 0 again): the backward alone at the
# published backward's head configurations (groups of two) and the training step at groups of two and four; the
# training step's kernels at (16, 32) 1x32768.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 170 python3 -m pytest tests/test_fused_bwd_gpu.py \
  tests/test_gdn_bwd_gpu.py -q -rfs -p no:cacheprovider --timeout 120 -x > "$OUT/pytest_fused.log" 2>&1
echo "pytest fused rc=$?"; grep -h "^FAILED\|^SKIPPED\|Error" "$OUT/pytest_fused.log" | head -8; tail -1 "$OUT/pytest_fused.log"
grep -h -A10 "worst relative" "$OUT/pytest_fused.log" | head -12
ab_by_setting() {  # MODE "HEADS" "MIXES"
  local mode=$1 tag
  for tag in 0 1 0b; do
    # shellcheck disable=SC2086
    FLASHQLA_FUSED_BWD=${tag%b} PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 90 python3 benchmarks/bench_gdn.py \
      --mode "$mode" --libs flashqla --heads $2 --mixes $3 --json "$OUT/ab_${mode}_$tag.json" > "$OUT/ab_${mode}_$tag.log" 2>&1
    echo "$mode fused=$tag rc=$?"
  done
  python3 scripts/device_calls/ms_table.py "$mode" "pair=$OUT/ab_${mode}_0.json" "fused=$OUT/ab_${mode}_1.json" \
    "pair_again=$OUT/ab_${mode}_0b.json"
}
ab_by_setting bwd "16,32 8,16 4,8 2,4" "1x8192 2048x4 1x32768 4096x8"
ab_by_setting fwdbwd "16,32 16,64 2,8" "1x8192 1x32768 8192x4"
FLASHQLA_FUSED_BWD=1 PYTHONPATH=/tmp/site timeout 60 python3 benchmarks/profile_kernels.py --heads 16,32 \
  --mixes 1x32768 > "$OUT/profile_1_16_32.log" 2>&1
awk '/training step:/{p=1} /chunk states kept/{p=0} p' "$OUT/profile_1_16_32.log"
