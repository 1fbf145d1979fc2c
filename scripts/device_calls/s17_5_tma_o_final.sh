#!/usr/bin/env bash
# One GPU, 7d6da95 (o of full chunks by TMA at BV = 128; side-stream launches ordered after the current stream's
# work): the GPU suite, the two-threads concurrency tests four more times, the 128-wide kernels side by side
# (ablate.py: with o; without o storing h), and the forward with peers at (16, 64).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
python3 -m pip install -q --no-deps --no-index --target /tmp/site .carry/flashqla-*.whl 2>&1 | grep -v WARNING
echo "wheel commit: $(PYTHONPATH=/tmp/site python3 -c 'import flashqla; print(flashqla.build_manifest().get("source_commit"))')"
t0=$(date +%s)
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 170 python3 -m pytest tests -q -rfs -p no:cacheprovider --timeout 120 \
  -m "not edge" > "$OUT/pytest.log" 2>&1
echo "pytest rc=$? $(( $(date +%s) - t0 )) s" >> "$OUT/pytest.log"
grep -h -A30 "^FAILED\|^___" "$OUT/pytest.log" | head -60; tail -2 "$OUT/pytest.log"
for r in 1 2 3 4; do
  PYTHONPATH=/tmp/site timeout 45 python3 -m pytest tests/test_concurrency_gpu.py -q -p no:cacheprovider -k two_threads \
    2>&1 | tail -1
done > "$OUT/concurrency.log"
sort "$OUT/concurrency.log" | uniq -c
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 90 python3 benchmarks/ablate.py --kernels fwd128 fwd128t \
  --variants cur --heads 2,8 16,64 32,128 > "$OUT/ablate_fwd.log" 2>&1
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 40 python3 benchmarks/ablate.py --kernels fwd128 fwd128t \
  --variants cur --heads 2,8 16,64 32,128 --no-o --store-h > "$OUT/ablate_fwd_h.log" 2>&1
grep -h "^fwd" "$OUT/ablate_fwd.log" "$OUT/ablate_fwd_h.log" | cut -c1-90
FQ_TMP=/tmp/g0 FQ_BENCH_TIMEOUT=${FQ_BENCH_TIMEOUT:-190} OUT=/tmp/o_fwd bash scripts/gpu_bench.sh --fwd "--heads 16,64"
cp /tmp/o_fwd/H200_fwd.json /tmp/o_fwd/H200_fwd.md /tmp/o_fwd/bench_fwd.log "$OUT/" 2>/dev/null
tail -2 "$OUT/bench_fwd.log"
