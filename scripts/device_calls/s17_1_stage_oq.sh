#!/usr/bin/env bash
# One GPU: o through q's ring stage at BV = 128 (stage_o): the fused forward's kernels side by side (ablate.py, JIT:
# BV = 64 staged, BV = 128 from registers, BV = 128 through q_s), the level-1 merge on tensor cores (tc_level1)
# against the default prep, the GPU suite on the wheel (BV = 128 through q_s), and the whole forward by width
# (flashqla only: automatic, 64, 128).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
python3 -m pip install -q --no-deps --no-index --target /tmp/site .carry/flashqla-*.whl 2>&1 | grep -v WARNING
echo "wheel commit: $(PYTHONPATH=/tmp/site python3 -c 'import flashqla; print(flashqla.build_manifest().get("source_commit"))')"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 150 python3 benchmarks/ablate.py --kernels fwd_so fwd128 fwd128q \
  --variants cur --heads 2,8 16,64 32,128 > "$OUT/ablate_fwd.log" 2>&1
echo "ablate rc=$?" >> "$OUT/ablate_fwd.log"
grep -h "^fwd\|rc=" "$OUT/ablate_fwd.log" | cut -c1-120
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 120 python3 benchmarks/ablate.py --kernels prep prep4l1 \
  --variants cur --heads 2,8 16,64 --tokens 32768 > "$OUT/ablate_prep.log" 2>&1
echo "ablate rc=$?" >> "$OUT/ablate_prep.log"
grep -h "^prep\|rc=" "$OUT/ablate_prep.log" | cut -c1-150
bash scripts/device_calls/suite_fwd_widths.sh
