#!/usr/bin/env bash
# Thirty-seventh session: the fused backward at two to four v-heads per qk-head (FLASHQLA_FUSED_GROUPS=1, the
# cluster variants of tilelang_src/sm90/gdn_bwd_fused.py) on the carried wheel, most wanted first (the call may be cut
# by the device time left): a smoke run (a hang or an error stops the call there), its GPU tests, the backward alone
# at (16, 32) 0 / 1, the one-v-head fused backward's tests, the training step at (16, 32), the backward at (2, 4), the
# step at three and four v-heads per qk-head, the step's kernels; flashqla alone. Needs .carry/flashqla-*.whl.
# About 280 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
nvidia-smi --query-gpu=name --format=csv,noheader
FLASHQLA_FUSED_GROUPS=1 PYTHONPATH=/tmp/site timeout 90 python3 - <<'PY'
import torch, flashqla
q, k = (torch.randn(1, 1000, 2, 128, device="cuda", dtype=torch.bfloat16).requires_grad_() for _ in range(2))
v = torch.randn(1, 1000, 4, 128, device="cuda", dtype=torch.bfloat16).requires_grad_()
g = (-torch.rand(1, 1000, 4, device="cuda") * 0.1).requires_grad_()
beta = torch.rand(1, 1000, 4, device="cuda").requires_grad_()
o, _ = flashqla.chunk_gated_delta_rule(q, torch.nn.functional.normalize(k, dim=-1), v, g, beta)
o.float().sum().backward()
torch.cuda.synchronize()
print("smoke: dq finite", bool(q.grad.isfinite().all()), "dk finite", bool(k.grad.isfinite().all()))
PY
rc=$?
echo "smoke rc=$rc"
[ $rc -eq 0 ] || exit 1
FLASHQLA_FUSED_GROUPS=1 run_pytest "$OUT/pytest_groups.log" 200 gpu tests/test_fused_groups_gpu.py
ON=/tmp/site:FLASHQLA_FUSED_GROUPS=1
OFF=/tmp/site:FLASHQLA_FUSED_GROUPS=0
AB_TIMEOUT=100 ab_runs bwd "16,32" "1x32768 1x8192 8192x4 4096x8 2048x4 1024x8" pair=$OFF cluster=$ON
FLASHQLA_FUSED_GROUPS=1 run_pytest "$OUT/pytest_fused.log" 120 gpu tests/test_fused_bwd_gpu.py
AB_TIMEOUT=100 ab_runs fwdbwd "16,32" "1x8192 8192x4 4096x8 1024x8" pair_step=$OFF cluster_step=$ON
AB_TIMEOUT=100 ab_runs bwd "2,4" "1x32768 1x8192 8192x4 1024x8" pair24=$OFF cluster24=$ON
AB_TIMEOUT=100 ab_runs fwdbwd "16,48 16,64 2,8" "8192x4 1024x8" pair_g34=$OFF cluster_g34=$ON
FLASHQLA_FUSED_GROUPS=1 profile_step 1 "16,32" "8192x4" 60
