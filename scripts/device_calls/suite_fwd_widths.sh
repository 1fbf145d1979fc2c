#!/usr/bin/env bash
# The GPU suite (-m "not edge") on the installed wheel (/tmp/site), then the whole forward by V-slice width (flashqla
# only: automatic, 64, 128; bench_gdn.py at (2, 8), (16, 32), (16, 64) x five mixes) and its table. Called by the
# s17_* scripts after their own steps.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
run_pytest "$OUT/pytest.log" 200 "not edge"
for bv in auto 64 128; do
  if [ $bv = auto ]; then unset FLASHQLA_FWD_BLOCK_V; else export FLASHQLA_FWD_BLOCK_V=$bv; fi
  PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 60 python3 benchmarks/bench_gdn.py --mode fwd --libs flashqla \
    --heads 2,8 16,32 16,64 --mixes 1x8192 1x32768 8192x4 4096x8 2048x16 --md "$OUT/fwd_bv_$bv.md" \
    --json "$OUT/fwd_bv_$bv.json" > "$OUT/fwd_bv_$bv.log" 2>&1
  echo "bench bv=$bv rc=$?"
done
unset FLASHQLA_FWD_BLOCK_V
python3 scripts/device_calls/ms_table.py "fwd by width" auto="$OUT/fwd_bv_auto.json" 64="$OUT/fwd_bv_64.json" \
  128="$OUT/fwd_bv_128.json"
