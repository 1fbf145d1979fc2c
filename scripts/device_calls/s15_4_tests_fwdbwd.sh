#!/usr/bin/env bash
# One GPU: the GPU suite on the session's final kernels (skipped with FQ_SKIP_TESTS=1), then a training step with
# peers at FQ_HEADS (default 2,8).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
python3 -m pip install -q --no-deps --no-index --target /tmp/site .carry/flashqla-*.whl 2>&1 | grep -v WARNING
echo "wheel commit: $(PYTHONPATH=/tmp/site python3 -c 'import flashqla; print(flashqla.build_manifest().get("source_commit"))')"
if [ -z "${FQ_SKIP_TESTS:-}" ]; then
t0=$(date +%s)
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 200 python3 -m pytest tests -q -rfs -p no:cacheprovider --timeout 120 \
  -m "not edge" > "$OUT/pytest.log" 2>&1
echo "pytest rc=$? $(( $(date +%s) - t0 )) s" >> "$OUT/pytest.log"
tail -4 "$OUT/pytest.log"
fi
h=${FQ_HEADS:-2,8}
FQ_TMP=/tmp/g0 FQ_BENCH_TIMEOUT=${FQ_BENCH_TIMEOUT:-330} OUT=/tmp/o_$h bash scripts/gpu_bench.sh --fwdbwd \
  "--heads $h --mixes 1x8192 1x32768 --libs flashqla,flashqla_keep,fla,flash_qla" > "$OUT/bench_${h/,/_}.log" 2>&1
cp /tmp/o_$h/H200_fwdbwd.json /tmp/o_$h/H200_fwdbwd.md /tmp/o_$h/bench_fwdbwd.log "$OUT/" 2>/dev/null
grep -h "^|" /tmp/o_$h/H200_fwdbwd.md 2>/dev/null | tail -3; tail -2 "$OUT/bench_${h/,/_}.log"
