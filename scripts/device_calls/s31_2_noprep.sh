#!/usr/bin/env bash
# Thirty-first session: the forward without the chunk prep (gdn_fwd_noprep.py, JIT from this tree): correctness
# against the float64 recurrence at both widths, then its time against the wheel's op (prep + forward) per shape.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
cat .carry/COMMIT; git log -1 --format=%h 2>/dev/null
nvidia-smi --query-gpu=name --format=csv,noheader
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
pip install --no-deps --no-index --target /tmp/site .carry/flashqla-*.whl > "$OUT/pip.log" 2>&1 || tail -3 "$OUT/pip.log"
PYTHONPATH=/tmp/site:/tmp/peers PYTHONUNBUFFERED=1 timeout 500 python3 benchmarks/noprep_check.py "$@" \
  > "$OUT/noprep_check.log" 2>&1
echo "noprep_check rc=$?"; grep -v "TileLang\|^$\|Warning\|read before\|Initialize the" "$OUT/noprep_check.log" | tail -30 | cut -c1-200
