#!/usr/bin/env bash
# Forty-eighth session, call 2 (H100): the GPU tests that s48_1's 240 s did not reach (it stopped after 500 of 623,
# inside tests/test_nonfinite.py, none failed), with their durations, then the first device run of the table-in-parts
# pipeline (s47_3_table_parts.sh fwd: warm_peers.py's parallel compiles, bench_gdn.py --skip-done), its parts kept apart
# from an H200's (PARTS_DIR benchmarks/results/s48/h100_parts; an H200's in benchmarks/results/s47). Ran on an H100
# with CALL_S=380 (benchmarks/results/s48/README.md). Needs .carry/flashqla-*.whl, .carry/COMMIT, .carry/peers.tar.xz.
set -uo pipefail
. scripts/device_calls/common.sh
begin_call
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 130 python3 -m pytest -q -rfs -p no:cacheprovider --timeout 100 -m gpu \
  --durations 12 "tests/test_nonfinite.py::test_non_finite_in_one_batch_row" tests/test_op_errors.py \
  tests/test_pdl_gpu.py tests/test_prefill_gpu.py tests/test_properties_gpu.py tests/test_seg_plan_gpu.py \
  tests/test_streams_gpu.py tests/test_train_noprep_gpu.py tests/test_walk_rs_gpu.py tests/test_walk_split_gpu.py \
  > "$OUT/pytest_rest.log" 2>&1
echo "pytest rest rc=$? $(( $(date +%s) - T0 )) s"
grep -h "^FAILED\|^SKIPPED\|^ERROR" "$OUT/pytest_rest.log" | head -12; grep -A14 "slowest" "$OUT/pytest_rest.log"
tail -1 "$OUT/pytest_rest.log"
# the table part gets what is left of CALL_S (default 440) from this call's start
left=$(( ${CALL_S:-440} - ($(date +%s) - T0) ))
echo "table part: DEADLINE_S $left"
parts=benchmarks/results/s48/h100_parts
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && parts=benchmarks/results/s47
[ "$left" -gt 240 ] && PARTS_DIR=$parts DEADLINE_S=$left \
  FQ_WARM_TIMEOUT=${FQ_WARM_TIMEOUT:-150} bash scripts/device_calls/s47_3_table_parts.sh fwd
echo "elapsed $(( $(date +%s) - T0 )) s"
