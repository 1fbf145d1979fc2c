#!/usr/bin/env bash
# Twenty-fourth session: the wheel of .carry/COMMIT with the fused backward in the op (FLASHQLA_FUSED_BWD=1):
# its GPU tests (float64, CP, tail, dispatch) and the backward's, then flashqla alone by setting in one wheel:
# the training step and the backward alone with the two passes (0), fused (1), the two passes again (drift).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 200 python3 -m pytest tests/test_fused_bwd_gpu.py \
  tests/test_dispatch_gpu.py -q -rfs -p no:cacheprovider --timeout 120 -x > "$OUT/pytest_fused.log" 2>&1
echo "pytest fused rc=$?"; grep -h "^FAILED\|^SKIPPED\|Error" "$OUT/pytest_fused.log" | head -8; tail -1 "$OUT/pytest_fused.log"
grep -h -A10 "worst relative" "$OUT/pytest_fused.log" | head -12
for mode in fwdbwd bwd; do
  for tag in 0 1 0b; do
    FLASHQLA_FUSED_BWD=${tag%b} PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 80 python3 benchmarks/bench_gdn.py \
      --mode $mode --libs flashqla --heads 16,16 32,32 --mixes 1x8192 1x32768 8192x4 4096x8 1024x8 \
      --json "$OUT/ab_${mode}_$tag.json" > "$OUT/ab_${mode}_$tag.log" 2>&1
    echo "$mode fused=$tag rc=$?"
  done
  python3 scripts/device_calls/ms_table.py $mode "pair=$OUT/ab_${mode}_0.json" "fused=$OUT/ab_${mode}_1.json" \
    "pair_again=$OUT/ab_${mode}_0b.json"
done
