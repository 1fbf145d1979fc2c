#!/usr/bin/env bash
# The reliability checks on an SM90 GPU, one device call per stage (each under 10 minutes), from the
# wheel carried in .carry/ and the test dependencies carried in .carry/wheels/ (hypothesis and
# sortedcontainers: the GPU machine has no network). Logs under $OUT, a summary line last.
#
#   bash scripts/gpu_reliability.sh tests      # errors, NaN/Inf, properties, concurrency, memory (~5 min)
#   bash scripts/gpu_reliability.sh edge       # tests marked edge: T = 1 ... 1M tokens, 2^33 elements (~4 min)
#   bash scripts/gpu_reliability.sh memory     # scripts/memory_flatness.py, 10,000 steps (~1 min)
#   bash scripts/gpu_reliability.sh sanitize   # scripts/sanitize.sh: compute-sanitizer, 4 tools (~5-8 min)
set -uo pipefail
stage=${1:?usage: gpu_reliability.sh tests|edge|memory|sanitize}
OUT=${OUT:-/tmp/flashqla_out}
mkdir -p "$OUT"
python3 -m pip install -q --no-deps --no-index --target /tmp/site .carry/flashqla-*.whl 2>&1 | grep -v WARNING
if compgen -G ".carry/wheels/*.whl" > /dev/null; then
  python3 -m pip install -q --no-deps --no-index --target /tmp/site .carry/wheels/*.whl 2>&1 | grep -v WARNING
fi
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
pytest_args=(-q -rfs -p no:cacheprovider)
case "$stage" in
  tests)
    timeout 570 python3 -m pytest "${pytest_args[@]}" -m "gpu and not edge" tests/test_errors.py \
      tests/test_op_errors.py tests/test_nonfinite.py tests/test_properties_gpu.py tests/test_concurrency_gpu.py \
      tests/test_memory_gpu.py > "$OUT/reliability_tests.log" 2>&1
    rc=$?; log="$OUT/reliability_tests.log";;
  edge)
    timeout 570 python3 -m pytest "${pytest_args[@]}" --durations=0 -m edge tests > "$OUT/edge_tests.log" 2>&1
    rc=$?; log="$OUT/edge_tests.log";;
  memory)
    timeout 570 python3 scripts/memory_flatness.py --steps 10000 > "$OUT/memory_flatness.log" 2>&1
    rc=$?; log="$OUT/memory_flatness.log";;
  sanitize)
    timeout 570 bash scripts/sanitize.sh "$OUT" > /tmp/sanitize_summary.log 2>&1  # reports: $OUT/<tool>.log
    rc=$?; log=/tmp/sanitize_summary.log;;
  *) echo "unknown stage $stage"; exit 2;;
esac
tail -n 40 "$log"
echo "SUMMARY stage=$stage rc=$rc (124: timed out) log=$log"
exit $rc
