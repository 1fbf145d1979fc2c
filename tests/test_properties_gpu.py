"""Property-based tests on the SM90 kernels (hypothesis, GPU only): random shapes up to 3000 tokens, up to
16 q/k heads with HV = H * {1, 2, 3, 4}, ragged lengths (0 and 1 included), padding tails, bf16/fp16 and
every option, forward and backward against float64 references on the GPU (tests/gdn_checks.py),
tolerances from tests/gdn_inputs.py. Outputs are NaN-poisoned before every kernel run (conftest).
FLASHQLA_HYPOTHESIS_SCALE multiplies the number of examples."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("hypothesis", reason="the property-based tests need hypothesis (the `test` extra)")

from hypothesis import assume, given  # noqa: E402

from gdn_checks import check_backward, check_forward  # noqa: E402
from gdn_inputs import TOL  # noqa: E402
from gdn_properties import cases, hypothesis_settings  # noqa: E402

pytestmark = pytest.mark.gpu
GPU_CASES = cases(max_tokens=3000, max_heads=16, max_seqs=12, dtypes=(torch.bfloat16, torch.float16))
GRAD_TOL = dict.fromkeys(("dq", "dk", "dv", "dg", "dbeta", "dh0"), TOL["grad"])
# dg and dbeta hold one value per (token, v-head), each a sum of products of bf16 GEMM operands that can
# cancel: on fewer than ~32 such values a relative L2 error measures one cancellation, not the kernels
# (tiny problems are pinned by tests/test_edge_gpu.py and test_gdn_bwd_gpu.py instead)
MIN_GATE_GRADIENTS = 32


@hypothesis_settings(examples=100)
@given(case=GPU_CASES)
def test_forward_matches_float64(case):
    check_forward(case, "cuda", TOL["o"], TOL["final_state"])


@hypothesis_settings(examples=60)
@given(case=GPU_CASES)
def test_backward_matches_float64(case):
    assume(case.used * case.HV >= MIN_GATE_GRADIENTS)
    check_backward(case, "cuda", GRAD_TOL)
