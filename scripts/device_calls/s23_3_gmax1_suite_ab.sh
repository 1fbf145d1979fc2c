#!/usr/bin/env bash
# Twenty-third session, third call. One GPU, e7e645b's wheel (the chunk gradient's gmax 1 variant: one v-head per
# qk-head loads dS1 and dO after Q and K) and a820a71's: the backward's GPU tests on the new wheel; compute-sanitizer
# over the chunk gradient (the driver now runs one v-head per group too); then flashqla alone, the backward, at groups
# 1-3, timed a820a71 / e7e645b / a820a71 (the repeat: the run's drift). About 300 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
install_ab_wheel a820a71
t0=$(date +%s)
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 200 python3 -m pytest -q -rfs -p no:cacheprovider --timeout 120 \
  -m "not edge" tests/test_gdn_bwd_gpu.py tests/test_dispatch_gpu.py tests/test_callers_gpu.py \
  tests/test_chunk_states_gpu.py tests/test_cp_gpu.py tests/test_nonfinite.py tests/test_properties_gpu.py \
  > "$OUT/pytest.log" 2>&1
echo "pytest rc=$? $(( $(date +%s) - t0 )) s"; grep -h "^FAILED\|^SKIPPED" "$OUT/pytest.log" | head -12
tail -1 "$OUT/pytest.log"
run_sanitizer /tmp/san gdn_bwd_chunk 60
grep -h "ERROR SUMMARY\|RACECHECK SUMMARY\|Potential" /tmp/san/*.log | head -8
ab_drift bwd a820a71 e7e645b "32,32 16,16 16,32 8,24" "1x8192 1x32768 8192x4 2048x4"
