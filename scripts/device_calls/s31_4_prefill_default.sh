#!/usr/bin/env bash
# Thirty-first session, last call: the wheel with gdn_fwd_noprep's p_in_math row and gdn_prefill's default rule (one
# v-head per qk-head). GPU tests of gdn_prefill, of the edge cases and of the callers (their no-gradient calls now go
# through gdn_prefill), then bench_gdn.py --mode fwd, flashqla alone, FLASHQLA_FWD_NOPREP unset / 0.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
cat .carry/COMMIT; nvidia-smi --query-gpu=name --format=csv,noheader
pip install --no-deps --no-index --target /tmp/site .carry/flashqla-*.whl > "$OUT/pip.log" 2>&1 || tail -3 "$OUT/pip.log"
for np in unset 0; do
  if [ $np = unset ]; then unset FLASHQLA_FWD_NOPREP; else export FLASHQLA_FWD_NOPREP=$np; fi
  PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 60 python3 benchmarks/bench_gdn.py --mode fwd \
    --heads 32,32 16,32 --mixes 8192x4 4096x8 2048x4 1024x8 --libs flashqla --json "$OUT/bench_np_$np.json" \
    --md "$OUT/bench_np_$np.md" > "$OUT/bench_np_$np.log" 2>&1
  echo "bench NOPREP=$np rc=$?"; grep "^| " "$OUT/bench_np_$np.md" | cut -d'|' -f2-6 | tail -8
done
unset FLASHQLA_FWD_NOPREP
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 40 python3 -m pytest -m gpu -q -p no:cacheprovider \
  tests/test_prefill_gpu.py > "$OUT/pytest_prefill.log" 2>&1
echo "pytest prefill rc=$?"; grep -E "passed|failed|FAILED" "$OUT/pytest_prefill.log" | head -8 | cut -c1-220
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 100 python3 -m pytest -m gpu -q -p no:cacheprovider \
  tests/test_edge_gpu.py tests/test_gdn_fwd_gpu.py tests/test_callers_gpu.py tests/test_memory_gpu.py > "$OUT/pytest_edge.log" 2>&1
echo "pytest edge/fwd/callers/memory rc=$?"; grep -E "passed|failed|FAILED" "$OUT/pytest_edge.log" | head -8 | cut -c1-220
