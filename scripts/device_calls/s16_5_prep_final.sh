#!/usr/bin/env bash
# One GPU: the single chunk prep (2ca9546): the GPU suite and its edge stage, compute-sanitizer memcheck / racecheck /
# synccheck of the prep, the prep against the per-v-head one of ebdf7e6 (ablate.py --base-dir .carry/base_prep,
# `git show ebdf7e6:tilelang_src/sm90/chunk_prep.py`), and one v-head per CTA against several (prep_ab.py).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
python3 -m pip install -q --no-deps --no-index --target /tmp/site .carry/flashqla-*.whl 2>&1 | grep -v WARNING
echo "wheel commit: $(PYTHONPATH=/tmp/site python3 -c 'import flashqla; print(flashqla.build_manifest().get("source_commit"))')"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 110 python3 benchmarks/ablate.py --kernels prep prep1 prep2 prep4n \
  --variants base cur --base-dir .carry/base_prep --heads 2,8 16,16 16,32 16,48 16,64 32,32 --tokens 32768 \
  > "$OUT/prep_final.log" 2>&1
echo "ablate rc=$?" >> "$OUT/prep_final.log"
grep -h "^prep\|rc=" "$OUT/prep_final.log" | cut -c1-120
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
t0=$(date +%s)
timeout 200 python3 -m pytest tests -q -rfs -p no:cacheprovider --timeout 120 -m "not edge" > "$OUT/pytest.log" 2>&1
echo "pytest rc=$? $(( $(date +%s) - t0 )) s" >> "$OUT/pytest.log"
grep -h "^FAILED" "$OUT/pytest.log" | head; tail -2 "$OUT/pytest.log"; grep -A11 "worst relative" "$OUT/pytest.log"
t0=$(date +%s)
timeout 110 python3 -m pytest tests -q -rfs -p no:cacheprovider --timeout 100 -m edge > "$OUT/pytest_edge.log" 2>&1
echo "edge rc=$? $(( $(date +%s) - t0 )) s" >> "$OUT/pytest_edge.log"; tail -2 "$OUT/pytest_edge.log"
mkdir -p /tmp/san
FQ_SANITIZE_TOOLS="memcheck racecheck synccheck" FQ_SANITIZER_ARGS="--kernel-name kns=gdn_chunk_prep" \
  FQ_SANITIZE_TOOL_TIMEOUT=60 bash scripts/sanitize.sh /tmp/san > "$OUT/sanitize.txt" 2>&1
cp /tmp/san/*.log "$OUT/" 2>/dev/null; grep -v "^$" "$OUT/sanitize.txt" | tail -6
timeout 90 python3 benchmarks/prep_ab.py --heads 2,8 16,16 16,64 --mixes 1x8192 8192x4 > "$OUT/prep_ab.log" 2>&1
echo "prep_ab rc=$?" >> "$OUT/prep_ab.log"; cat "$OUT/prep_ab.log"
