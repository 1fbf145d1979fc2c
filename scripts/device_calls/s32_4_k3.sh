#!/usr/bin/env bash
# Thirty-second session: gdn_fwd_noprep with a three-stage ring of K, g's cumsum and beta (k_stages=3, the new wheel in
# .carry) against the same kernel with two (.carry/old: ac424e0's wheel), in the op (bench_gdn.py, CUDA graphs,
# flashqla alone), the runs alternated; the GPU tests of gdn_prefill and of the no-gradient callers on the new wheel;
# then Nsight Compute of the new kernel (where its waits went). About 300 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
cat .carry/COMMIT; nvidia-smi --query-gpu=name --format=csv,noheader
pip install --no-deps --no-index --target /tmp/site .carry/flashqla-*.whl > "$OUT/pip.log" 2>&1 || tail -3 "$OUT/pip.log"
pip install --no-deps --no-index --target /tmp/site_old .carry/old/flashqla-*.whl >> "$OUT/pip.log" 2>&1 || tail -3 "$OUT/pip.log"
for run in old new old new; do
  site=/tmp/site; [ $run = old ] && site=/tmp/site_old
  PYTHONPATH=$site PYTHONUNBUFFERED=1 timeout 50 python3 benchmarks/bench_gdn.py --mode fwd --heads 32,32 \
    --mixes 8192x4 4096x8 2048x4 1024x8 1x8192 --libs flashqla --json "$OUT/ab.json" --md "$OUT/ab.md" > "$OUT/ab.log" 2>&1
  echo "$run rc=$? $(grep '^| ' "$OUT/ab.md" | cut -d'|' -f5 | tail -5 | tr -d ' ' | tr '\n' ' ')"
done
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 40 python3 -m pytest -m gpu -q -p no:cacheprovider \
  tests/test_prefill_gpu.py > "$OUT/pytest_prefill.log" 2>&1
echo "pytest prefill rc=$?"; grep -E "passed|failed|FAILED" "$OUT/pytest_prefill.log" | head -8 | cut -c1-220
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 100 python3 -m pytest -m gpu -q -p no:cacheprovider \
  tests/test_edge_gpu.py tests/test_gdn_fwd_gpu.py tests/test_callers_gpu.py tests/test_memory_gpu.py > "$OUT/pytest_edge.log" 2>&1
echo "pytest edge/fwd/callers/memory rc=$?"; grep -E "passed|failed|FAILED" "$OUT/pytest_edge.log" | head -8 | cut -c1-220
NCU_STEP=prefill PYTHONPATH=/tmp/site bash scripts/ncu_profile.sh "$OUT/ncu" 32,32 8192,8192,8192,8192 gdn_fwd_noprep@1
python3 scripts/ncu_regions.py "$OUT/ncu/gdn_fwd_noprep.sass.csv" --min 0.7 > "$OUT/regions.txt" 2>&1
echo "regions rc=$?"; head -c 5000 "$OUT/regions.txt"
rm -f "$OUT"/ncu/*.ncu-rep "$OUT"/ncu/*.details.txt "$OUT"/ncu/step.py "$OUT"/ncu/*.log
