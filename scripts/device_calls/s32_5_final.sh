#!/usr/bin/env bash
# Thirty-second session, last call: the wheel with gdn_fwd_noprep's shipped row at k_stages=3 and x_free_early.
# GPU tests of gdn_prefill and of the no-gradient callers; flashqla alone with the prep-free kernel for every group
# (FLASHQLA_FWD_NOPREP=1) against the default rule (one v-head per qk-head) on grouped heads; then (32, 32) beside
# FLA and FlashQLA on the mixes where the last run lost. Needs the wheel and .carry/peers.tar.xz. About 400 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
cat .carry/COMMIT; nvidia-smi --query-gpu=name --format=csv,noheader
pip install --no-deps --no-index --target /tmp/site .carry/flashqla-*.whl > "$OUT/pip.log" 2>&1 || tail -3 "$OUT/pip.log"
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 40 python3 -m pytest -m gpu -q -p no:cacheprovider \
  tests/test_prefill_gpu.py > "$OUT/pytest_prefill.log" 2>&1
echo "pytest prefill rc=$?"; grep -E "passed|failed|FAILED" "$OUT/pytest_prefill.log" | head -8 | cut -c1-220
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 100 python3 -m pytest -m gpu -q -p no:cacheprovider \
  tests/test_edge_gpu.py tests/test_gdn_fwd_gpu.py tests/test_callers_gpu.py tests/test_memory_gpu.py > "$OUT/pytest_edge.log" 2>&1
echo "pytest edge/fwd/callers/memory rc=$?"; grep -E "passed|failed|FAILED" "$OUT/pytest_edge.log" | head -8 | cut -c1-220
for np in unset 1; do
  if [ $np = unset ]; then unset FLASHQLA_FWD_NOPREP; else export FLASHQLA_FWD_NOPREP=$np; fi
  PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 70 python3 benchmarks/bench_gdn.py --mode fwd \
    --heads 16,32 16,64 2,8 8,24 --mixes 8192x4 2048x4 1024x8 --libs flashqla --json "$OUT/group_$np.json" \
    --md "$OUT/group_$np.md" > "$OUT/group_$np.log" 2>&1
  echo "NOPREP=$np rc=$? $(grep '^| ' "$OUT/group_$np.md" | cut -d'|' -f5 | tail -12 | tr -d ' ' | tr '\n' ' ')"
done
unset FLASHQLA_FWD_NOPREP
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/site:/tmp/peers PYTHONUNBUFFERED=1 timeout 200 python3 benchmarks/bench_gdn.py --mode fwd --heads 32,32 \
  --mixes 8192x4 4096x8 2048x4 1024x8 16384+16384 4096+4096 1x8192 --libs flashqla,fla,flash_qla \
  --json "$OUT/peers_32_32.json" --md "$OUT/peers_32_32.md" > "$OUT/peers.log" 2>&1
echo "peers rc=$?"; grep "^| \|\[bench\]" "$OUT/peers_32_32.md" | cut -c1-170 | tail -10
