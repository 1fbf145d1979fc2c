#!/usr/bin/env bash
# Thirty-first session: gdn_prefill with the forward without the chunk prep. (1) the kernel's variants JIT-compiled
# from this tree (noprep_check.py: correctness against float64, time against the wheel's op); (2) the wheel's GPU tests
# of gdn_prefill (tests/test_prefill_gpu.py); (3) bench_gdn.py --mode fwd, flashqla alone, FLASHQLA_FWD_NOPREP 0 and 1
# (CUDA-graph replay, the same process per setting).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
cat .carry/COMMIT; nvidia-smi --query-gpu=name --format=csv,noheader
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
pip install --no-deps --no-index --target /tmp/site .carry/flashqla-*.whl > "$OUT/pip.log" 2>&1 || tail -3 "$OUT/pip.log"
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider \
  tests/test_prefill_gpu.py > "$OUT/pytest_prefill.log" 2>&1
echo "pytest rc=$?"; grep -E "passed|failed|FAILED|Error|assert" "$OUT/pytest_prefill.log" | head -12 | cut -c1-220
for np in 0 1; do
  FLASHQLA_FWD_NOPREP=$np PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 120 python3 benchmarks/bench_gdn.py --mode fwd \
    --heads 32,32 16,32 --mixes 8192x4 4096x8 2048x4 1024x8 1x8192 --libs flashqla --json "$OUT/bench_np$np.json" \
    --md "$OUT/bench_np$np.md" > "$OUT/bench_np$np.log" 2>&1
  echo "bench NOPREP=$np rc=$?"; grep "^| " "$OUT/bench_np$np.md" | cut -d'|' -f2-6 | tail -10
done
PYTHONPATH=/tmp/site:/tmp/peers PYTHONUNBUFFERED=1 timeout 240 python3 benchmarks/noprep_check.py "$@" \
  > "$OUT/noprep_check.log" 2>&1
echo "noprep_check rc=$?"; grep -v "TileLang\|^$\|Warning\|read before\|Initialize the" "$OUT/noprep_check.log" | tail -22 | cut -c1-200
