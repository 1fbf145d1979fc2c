#!/usr/bin/env bash
# One GPU: the side streams against one stream (streams_ab.py: forward, training step, backward; results compared
# bit for bit), the stream tests first, the GPU suite, compute-sanitizer (memcheck and racecheck of every kernel).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
python3 -m pip install -q --no-deps --no-index --target /tmp/site .carry/flashqla-*.whl 2>&1 | grep -v WARNING
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
echo "wheel commit: $(python3 -c 'import flashqla; print(flashqla.build_manifest().get("source_commit"))')"
timeout 120 python3 -m pytest tests/test_streams_gpu.py tests/test_cp_gpu.py -q -x -p no:cacheprovider > "$OUT/pytest_streams.log" 2>&1
echo "streams tests rc=$?" | tee -a "$OUT/pytest_streams.log"; tail -3 "$OUT/pytest_streams.log"
timeout 200 python3 benchmarks/streams_ab.py --heads 2,8 4,16 8,32 16,32 16,64 --mixes 1x8192 1x32768 8192x4 \
  > "$OUT/streams_ab.log" 2>&1; echo "streams_ab rc=$?" >> "$OUT/streams_ab.log"
t0=$(date +%s)
timeout 200 python3 -m pytest tests -q -rfs -p no:cacheprovider --timeout 120 -m "not edge" > "$OUT/pytest.log" 2>&1
echo "pytest rc=$? $(( $(date +%s) - t0 )) s" >> "$OUT/pytest.log"
mkdir -p /tmp/san
FQ_SANITIZE_TOOLS="memcheck racecheck" FQ_SANITIZER_ARGS="--kernel-name kns=gdn_" FQ_SANITIZE_TOOL_TIMEOUT=90 \
  bash scripts/sanitize.sh /tmp/san > /tmp/san/summary.txt 2>&1
cp /tmp/san/summary.txt "$OUT/sanitize.txt"; cp /tmp/san/*.log "$OUT/" 2>/dev/null
tail -4 "$OUT/pytest.log"
grep -v "^$" "$OUT/sanitize.txt" | tail -4
grep -v Warning "$OUT/streams_ab.log" | tail -20
