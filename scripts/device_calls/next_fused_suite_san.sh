#!/usr/bin/env bash
# (Written in the twenty-fourth session for the next one; not yet run.) One GPU, the wheel of .carry/COMMIT (8077b2c or
# later: the fused backward on by default at one v-head per qk-head): the GPU suite's files not run on the fused default
# yet (the forward's, the prep's, the widths, huge / errors ...: everything but the 210 tests of s24_8), the edge stage,
# and compute-sanitizer racecheck / synccheck / memcheck over the fused kernel (scripts/sanitize_driver.py runs one
# v-head per qk-head in fp16, and forced segments). About 450 s; the whole suite took ~5 min at e7e645b.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
t0=$(date +%s)
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 260 python3 -m pytest tests -q -rfs -p no:cacheprovider --timeout 120 \
  -m "gpu and not edge" --deselect tests/test_fused_bwd_gpu.py --deselect tests/test_gdn_bwd_gpu.py \
  --deselect tests/test_cp_gpu.py --deselect tests/test_dispatch_gpu.py --deselect tests/test_callers_gpu.py \
  --deselect tests/test_nonfinite.py --deselect tests/test_properties_gpu.py --deselect tests/test_streams_gpu.py \
  --deselect tests/test_memory_gpu.py --deselect tests/test_concurrency_gpu.py --deselect tests/test_chunk_states_gpu.py \
  > "$OUT/pytest_rest.log" 2>&1
echo "pytest (rest) rc=$? $(( $(date +%s) - t0 )) s"; grep -h "^FAILED\|^ERROR" "$OUT/pytest_rest.log" | head -8
tail -1 "$OUT/pytest_rest.log"
run_pytest "$OUT/pytest_edge.log" 110 edge
run_sanitizer /tmp/san gdn_bwd_fused 50
grep -h "ERROR SUMMARY\|RACECHECK SUMMARY\|Potential" /tmp/san/*.log | head -8
