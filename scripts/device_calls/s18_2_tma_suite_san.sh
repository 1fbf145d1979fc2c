#!/usr/bin/env bash
# One GPU, the wheel with the TMA stores on (prep's A and Z, forward storer's h, state gradient's dh): the GPU suite,
# the edge stage, compute-sanitizer of every flashqla kernel (default widths, then the forward forced to BV = 128),
# and the chunk prep's ablation bits (where its time goes now) at 32768 tokens.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
python3 -m pip install -q --no-deps --no-index --target /tmp/site .carry/flashqla-*.whl 2>&1 | grep -v WARNING
echo "wheel commit: $(PYTHONPATH=/tmp/site python3 -c 'import flashqla; print(flashqla.build_manifest().get("source_commit"))')"
t0=$(date +%s)
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 210 python3 -m pytest tests -q -rfs -p no:cacheprovider --timeout 120 \
  -m "not edge" > "$OUT/pytest.log" 2>&1
echo "pytest rc=$? $(( $(date +%s) - t0 )) s"; grep -h "^FAILED\|^SKIPPED" "$OUT/pytest.log" | head -12; tail -1 "$OUT/pytest.log"
grep -h -A12 "worst relative" "$OUT/pytest.log" | head -14
t0=$(date +%s)
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 100 python3 -m pytest tests -q -rfs -p no:cacheprovider --timeout 90 \
  -m edge > "$OUT/pytest_edge.log" 2>&1
echo "edge pytest rc=$? $(( $(date +%s) - t0 )) s"; grep -h "^FAILED" "$OUT/pytest_edge.log" | head; tail -1 "$OUT/pytest_edge.log"
mkdir -p /tmp/san /tmp/san128
PYTHONPATH=/tmp/site FQ_SANITIZE_TOOLS="racecheck synccheck memcheck" FQ_SANITIZER_ARGS="--kernel-name kns=gdn_" \
  FQ_SANITIZE_TOOL_TIMEOUT=110 bash scripts/sanitize.sh /tmp/san
FLASHQLA_FWD_BLOCK_V=128 PYTHONPATH=/tmp/site FQ_SANITIZE_TOOLS="racecheck memcheck" \
  FQ_SANITIZER_ARGS="--kernel-name kns=gdn_fwd" FQ_SANITIZE_TOOL_TIMEOUT=60 bash scripts/sanitize.sh /tmp/san128
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 100 python3 benchmarks/ablate.py --kernels prep --variants cur ablate \
  --tokens 32768 --heads 2,8 16,64 > "$OUT/ablate_prep_bits.log" 2>&1
echo "prep ablate rc=$?"; grep -A40 "^kernel " "$OUT/ablate_prep_bits.log" | cut -c1-100
