#!/usr/bin/env bash
# One GPU: the grouped prep with the level-2 merge in TF32: the GPU suite (every forward test checks A and o against
# float64), the prep's variants side by side (ablate.py, JIT: time and max |A - A_prep|), and the forward and
# training step with either prep (prep_ab.py).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
python3 -m pip install -q --no-deps --no-index --target /tmp/site .carry/flashqla-*.whl 2>&1 | grep -v WARNING
echo "wheel commit: $(PYTHONPATH=/tmp/site python3 -c 'import flashqla; print(flashqla.build_manifest().get("source_commit"))')"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 100 python3 benchmarks/ablate.py --kernels prep prepg4 prepg4n prepg4c6 \
  prepg2 prepg2n --variants cur --heads 2,8 8,32 16,64 16,32 --tokens 32768 > "$OUT/prepg_tc.log" 2>&1
echo "ablate rc=$?" >> "$OUT/prepg_tc.log"
grep -h "^prep\|rc=" "$OUT/prepg_tc.log" | cut -c1-150
t0=$(date +%s)
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 240 python3 -m pytest tests -q -rfs -p no:cacheprovider --timeout 120 \
  -m "not edge" > "$OUT/pytest.log" 2>&1
echo "pytest rc=$? $(( $(date +%s) - t0 )) s" >> "$OUT/pytest.log"
grep -h "^FAILED" "$OUT/pytest.log" | head; tail -2 "$OUT/pytest.log"
grep -A11 "worst relative" "$OUT/pytest.log"
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 150 python3 benchmarks/prep_ab.py \
  --heads 2,8 4,16 8,32 16,32 16,48 16,64 --mixes 1x8192 1x32768 8192x4 > "$OUT/prep_ab.log" 2>&1
echo "prep_ab rc=$?" >> "$OUT/prep_ab.log"
cat "$OUT/prep_ab.log"
