#!/usr/bin/env bash
# Thirty-ninth session: s38_3_cp_scan.sh cut to fit what device time was left (about 350 s): the scan
# (FLASHQLA_CP_SCAN=1; its complete maps no longer copied on each round, a7c2e6a) smoke-run, its GPU tests against the
# walk and float64, then flashqla alone with the walk and the scan (the walk's segment plans in this wheel): the
# backward at the published backward heads, the forward at few heads, and the scan at forced segment lengths (the
# data for pricing the scan per round in the segment model). Needs .carry/flashqla-*.whl of dcb2abd or later.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
nvidia-smi --query-gpu=name --format=csv,noheader
FLASHQLA_CP_SCAN=1 PYTHONPATH=/tmp/site timeout 60 python3 - <<'PY'
import torch, flashqla
from flashqla.reference import gdn_chunk_ref
q, k = (torch.randn(1, 8192, 2, 128, device="cuda", dtype=torch.bfloat16) for _ in range(2))
k = torch.nn.functional.normalize(k.float(), dim=-1).to(torch.bfloat16)
v = torch.randn(1, 8192, 8, 128, device="cuda", dtype=torch.bfloat16)
g = -torch.rand(1, 8192, 8, device="cuda") * 0.05
g[..., :2] = 0  # two heads without decay: the exact fallback, whose maps compose
beta = torch.rand(1, 8192, 8, device="cuda")
h0 = torch.randn(1, 8, 128, 128, device="cuda") / 8
out = flashqla.chunk_gated_delta_rule_fwd(q, k, v, g, beta, initial_state=h0, output_final_state=True,
                                          cp_segment_chunks=2)
torch.cuda.synchronize()
o_ref, ht_ref = gdn_chunk_ref(q, k, v, g, beta, initial_state=h0, output_final_state=True)
err = lambda x, r: float((x.double() - r).norm() / r.norm())
print(f"smoke: o rel err {err(out.o, o_ref):.2e}, final state {err(out.final_state, ht_ref):.2e}")
PY
rc=$?
echo "smoke rc=$rc"
[ $rc -eq 0 ] || exit 1
run_pytest "$OUT/pytest_scan.log" 120 gpu tests/test_cp_scan_gpu.py
echo "elapsed ${SECONDS} s"
WALK=/tmp/site:FLASHQLA_CP_SCAN=0
SCAN=/tmp/site:FLASHQLA_CP_SCAN=1
AB_TIMEOUT=50 ab_runs bwd "2,4 4,8 8,16" "1x32768 1x8192 16384+16384 8192x4" walk_bwd=$WALK scan_bwd=$SCAN
echo "elapsed ${SECONDS} s"
AB_TIMEOUT=40 ab_runs fwd "2,4 4,8 2,8" "1x32768 1x8192 16384+16384" walk=$WALK scan=$SCAN
echo "elapsed ${SECONDS} s"
FLASHQLA_CP_SCAN=1 PYTHONPATH=/tmp/site timeout 90 python3 benchmarks/cp_sweep.py --hint --no-wide --heads 2,4 4,8 \
  --mixes 1x32768 1x8192 --cp -1 4 8 16 32 64 > "$OUT/cp_sweep_scan.log" 2>&1
echo "cp_sweep (scan) rc=$?"; grep -v "^$\|Warning" "$OUT/cp_sweep_scan.log" | tail -16
echo "elapsed ${SECONDS} s"
