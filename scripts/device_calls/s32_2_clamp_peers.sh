#!/usr/bin/env bash
# Thirty-second session: gdn_fwd_noprep with its gate exponents clamped at GATE_EXP_MAX (one min per element, as the
# first kernel) instead of selected. The prefill GPU tests (the growing-gate case among them), the flashqla-alone A/B
# (FLASHQLA_FWD_NOPREP unset / 0) at (32, 32), then the forward at (32, 32), all 19 mixes, beside the peers. Needs
# the wheel and .carry/peers.tar.xz.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
cat .carry/COMMIT; nvidia-smi --query-gpu=name --format=csv,noheader
pip install --no-deps --no-index --target /tmp/site .carry/flashqla-*.whl > "$OUT/pip.log" 2>&1 || tail -3 "$OUT/pip.log"
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 40 python3 -m pytest -m gpu -q -p no:cacheprovider \
  tests/test_prefill_gpu.py > "$OUT/pytest_prefill.log" 2>&1
echo "pytest prefill rc=$?"; grep -E "passed|failed|FAILED" "$OUT/pytest_prefill.log" | head -8 | cut -c1-220
for np in unset 0; do
  if [ $np = unset ]; then unset FLASHQLA_FWD_NOPREP; else export FLASHQLA_FWD_NOPREP=$np; fi
  PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 50 python3 benchmarks/bench_gdn.py --mode fwd \
    --heads 32,32 --mixes 8192x4 4096x8 2048x4 1024x8 --libs flashqla --json "$OUT/ab_$np.json" \
    --md "$OUT/ab_$np.md" > "$OUT/ab_$np.log" 2>&1
  echo "A/B NOPREP=$np rc=$?"; grep "^| " "$OUT/ab_$np.md" | cut -d'|' -f3-6 | tail -4
done
unset FLASHQLA_FWD_NOPREP
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/site:/tmp/peers PYTHONUNBUFFERED=1 timeout 330 python3 benchmarks/bench_gdn.py --mode fwd --heads 32,32 \
  --json "$OUT/fwd_32_32.json" --md "$OUT/fwd_32_32.md" > "$OUT/bench.log" 2>&1
echo "bench rc=$?"; grep "^| \|\[bench\]" "$OUT/fwd_32_32.md" | cut -c1-170 | tail -22
