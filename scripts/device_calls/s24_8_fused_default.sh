#!/usr/bin/env bash
# Twenty-fourth session: the wheel of .carry/COMMIT with the fused backward on by default at one v-head per
# qk-head: the GPU tests that run the backward (float64, context parallelism, dispatch, callers, NaN isolation,
# properties, streams, memory, concurrency), in two parts with their own limits.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
t0=$(date +%s)
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 150 python3 -m pytest tests/test_fused_bwd_gpu.py tests/test_gdn_bwd_gpu.py \
  tests/test_cp_gpu.py tests/test_dispatch_gpu.py -q -rfs -p no:cacheprovider --timeout 120 > "$OUT/pytest_a.log" 2>&1
echo "pytest A rc=$? $(( $(date +%s) - t0 )) s"; grep -h "^FAILED\|^ERROR" "$OUT/pytest_a.log" | head -8; tail -1 "$OUT/pytest_a.log"
grep -h -A10 "worst relative" "$OUT/pytest_a.log" | head -12
t0=$(date +%s)
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 120 python3 -m pytest tests/test_callers_gpu.py tests/test_nonfinite.py \
  tests/test_properties_gpu.py tests/test_streams_gpu.py tests/test_memory_gpu.py tests/test_concurrency_gpu.py \
  tests/test_chunk_states_gpu.py -m "not edge" -q -rfs -p no:cacheprovider --timeout 120 > "$OUT/pytest_b.log" 2>&1
echo "pytest B rc=$? $(( $(date +%s) - t0 )) s"; grep -h "^FAILED\|^ERROR" "$OUT/pytest_b.log" | head -8; tail -1 "$OUT/pytest_b.log"
