#!/usr/bin/env bash
# One GPU: the grouped chunk prep's wheel: its tests, the GPU suite, the forward and training step with either
# prep (prep_ab.py), and the grouped prep's pieces (ablate.py bits, JIT).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
python3 -m pip install -q --no-deps --no-index --target /tmp/site .carry/flashqla-*.whl 2>&1 | grep -v WARNING
echo "wheel commit: $(PYTHONPATH=/tmp/site python3 -c 'import flashqla; print(flashqla.build_manifest().get("source_commit"))')"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
t0=$(date +%s)
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 240 python3 -m pytest tests -q -rfs -p no:cacheprovider --timeout 120 \
  -m "not edge" > "$OUT/pytest.log" 2>&1
echo "pytest rc=$? $(( $(date +%s) - t0 )) s" >> "$OUT/pytest.log"
grep -h "prep_group\|several_launches" "$OUT/pytest.log" | head -5; tail -3 "$OUT/pytest.log"
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 150 python3 benchmarks/prep_ab.py \
  --heads 2,8 4,16 8,32 16,32 16,48 16,64 --mixes 1x8192 1x32768 8192x4 > "$OUT/prep_ab.log" 2>&1
echo "prep_ab rc=$?" >> "$OUT/prep_ab.log"
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 100 python3 benchmarks/ablate.py --kernels prep prepg3 prepg4 \
  --variants cur ablate --heads 2,8 16,64 16,48 --tokens 32768 > "$OUT/prepg_ablate.log" 2>&1
echo "ablate rc=$?" >> "$OUT/prepg_ablate.log"
grep -h "^prep" "$OUT/prepg_ablate.log" | cut -c1-90
cat "$OUT/prep_ab.log"
