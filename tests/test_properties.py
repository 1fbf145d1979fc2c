"""Property-based tests on the CPU path (hypothesis; fast enough for CI): random shapes, head ratios,
ragged lengths (0 and 1 included), padding tails and options, forward and backward against float64
references (tests/gdn_checks.py, cases drawn by tests/gdn_properties.py).

The CPU path computes in float64 and only rounds its results, so the bounds here are rounding bounds,
much tighter than the kernels' TOL: bf16/fp16 results (o, dq, dk, dv) within 2^-9 per element plus the
l2norm's fp32 backward (5e-3 in relative L2), fp32 results (final state, dg, dbeta, dh0) within 1e-6."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("hypothesis", reason="the property-based tests need hypothesis (the `test` extra)")

from hypothesis import given  # noqa: E402

from gdn_checks import check_backward, check_forward  # noqa: E402
from gdn_properties import cases, hypothesis_settings  # noqa: E402

CPU_CASES = cases(max_tokens=128, max_heads=2, max_seqs=5, dtypes=(torch.bfloat16, torch.float16))
ROUNDED, FP32 = 5e-3, 1e-6
GRAD_TOL = {"dq": ROUNDED, "dk": ROUNDED, "dv": ROUNDED, "dg": FP32, "dbeta": FP32, "dh0": FP32}


@hypothesis_settings(examples=20)
@given(case=CPU_CASES)
def test_forward_matches_float64(case):
    check_forward(case, "cpu", ROUNDED, FP32)


@hypothesis_settings(examples=15)
@given(case=CPU_CASES)
def test_backward_matches_float64(case):
    check_backward(case, "cpu", GRAD_TOL)
