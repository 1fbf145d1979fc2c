#!/usr/bin/env bash
# One GPU: the overlapped backward against the serial one (bwd_overlap.py), the GPU suite, compute-sanitizer
# (memcheck of every kernel, racecheck / synccheck of the TMA walk).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
python3 -m pip install -q --no-deps --no-index --target /tmp/site .carry/flashqla-*.whl 2>&1 | grep -v WARNING
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
echo "wheel commit: $(python3 -c 'import flashqla; print(flashqla.build_manifest().get("source_commit"))')"
timeout 200 python3 benchmarks/bwd_overlap.py --heads 2,8 4,16 8,32 16,32 16,64 --mixes 1x8192 1x32768 8192x4 \
  > "$OUT/overlap.log" 2>&1; echo "overlap rc=$?" >> "$OUT/overlap.log"
t0=$(date +%s)
timeout 220 python3 -m pytest tests -q -rfs -p no:cacheprovider --timeout 120 -m "not edge" > "$OUT/pytest.log" 2>&1
echo "pytest rc=$? $(( $(date +%s) - t0 )) s" >> "$OUT/pytest.log"
mkdir -p /tmp/san
FQ_SANITIZE_TOOLS="memcheck" FQ_SANITIZER_ARGS="--kernel-name kns=gdn_" FQ_SANITIZE_TOOL_TIMEOUT=90 \
  bash scripts/sanitize.sh /tmp/san > /tmp/san/summary.txt 2>&1
FQ_SANITIZE_TOOLS="racecheck synccheck" FQ_SANITIZER_ARGS="--kernel-name kns=gdn_cp_correct" FQ_SANITIZE_TOOL_TIMEOUT=60 \
  bash scripts/sanitize.sh /tmp/san2 >> /tmp/san/summary.txt 2>&1
cp /tmp/san/summary.txt "$OUT/sanitize.txt"; cp /tmp/san/*.log /tmp/san2/*.log "$OUT/" 2>/dev/null
tail -4 "$OUT/pytest.log"
cat "$OUT/sanitize.txt" | grep -v "^$" | tail -8
cat "$OUT/overlap.log" | grep -v Warning | tail -20
