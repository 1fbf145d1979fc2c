#!/usr/bin/env bash
# One GPU: o of the 128-wide forward staged in shared memory (stage_o), in the form of the ablate.py spec given
# (fwd128o: through W's stage by the storer warp, 0fc3428, s17_2; fwd128t: by TMA from W's stage, dfc76d6, s17_4):
# the fused forward's kernels side by side (ablate.py, JIT: BV = 64 staged, BV = 128 from registers, the given form;
# with o, and without o storing h as the backward's recompute does), then the GPU suite on the wheel and the whole
# forward by width (suite_fwd_widths.sh).
#   bash scripts/device_calls/s17_stage_o_ab.sh fwd128t
set -uo pipefail
K128=${1:?the 128-wide staged form: an ablate.py spec (fwd128t; fwd128o at 0fc3428)}
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
python3 -m pip install -q --no-deps --no-index --target /tmp/site .carry/flashqla-*.whl 2>&1 | grep -v WARNING
echo "wheel commit: $(PYTHONPATH=/tmp/site python3 -c 'import flashqla; print(flashqla.build_manifest().get("source_commit"))')"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 150 python3 benchmarks/ablate.py --kernels fwd_so fwd128 $K128 \
  --variants cur --heads 2,8 16,64 32,128 > "$OUT/ablate_fwd.log" 2>&1
echo "ablate rc=$?" >> "$OUT/ablate_fwd.log"
grep -h "^fwd\|rc=" "$OUT/ablate_fwd.log" | cut -c1-120
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 90 python3 benchmarks/ablate.py --kernels fwd128 $K128 \
  --variants cur --heads 2,8 16,64 32,128 --no-o --store-h > "$OUT/ablate_fwd_h.log" 2>&1
echo "ablate rc=$?" >> "$OUT/ablate_fwd_h.log"
grep -h "^fwd\|rc=" "$OUT/ablate_fwd_h.log" | cut -c1-120
bash scripts/device_calls/suite_fwd_widths.sh
