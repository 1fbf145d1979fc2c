"""benchmarks/inverse_precision.py, the CPU study of the chunk inverse's number formats: its blockwise inverse in
float64 is the exact inverse, its TF32 rounding is round-to-nearest on 10 mantissa bits, and a coarser operand
format costs more error than a finer one (so the study can tell schemes apart)."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import inverse_precision as ip  # noqa: E402


def _chunks(case: str, n: int = 8, seed: int = 3):
    k, beta, gc = ip.make_chunks(case, n, torch.Generator().manual_seed(seed))
    L = ip.lower_matrix(k, beta, gc, gated=False)
    return L, ip.exact_inverse(L)


def test_float64_scheme_is_the_exact_inverse():
    L, exact = _chunks("correlated 0.9")
    for diag in (8, 16):
        levels = {8: 3, 16: 2}[diag]
        s = ip.Scheme("check", diag, ("fp64",) * levels, "fp64", "fp64")
        inv = ip.blockwise_inverse(L, s)
        # the diagonal solves run in fp32 by design: the rest is exact
        assert ip.rel_err(inv, exact).max() < 1e-6
        assert torch.equal(torch.triu(inv, diagonal=1), torch.zeros_like(inv))


def test_tf32_rounding():
    one = torch.tensor([1.0], dtype=torch.float64)
    ulp = 2.0 ** -10  # TF32's spacing at 1
    assert ip.to_tf32(one + 0.49 * ulp).item() == 1.0
    assert ip.to_tf32(one + 0.51 * ulp).item() == 1.0 + ulp
    assert ip.to_tf32(torch.tensor([3e38], dtype=torch.float64)).isfinite().all()  # fp32's range, unlike fp16
    x = torch.randn(1000, dtype=torch.float64)
    rel = ((ip.to_tf32(x) - x).abs() / x.abs()).max().item()
    assert 2.0 ** -13 < rel <= 2.0 ** -11 * (1 + 1e-6)


def test_coarser_operands_cost_more():
    L, exact = _chunks("correlated 0.99")
    errs = {}
    for fmt in ("fp32", "tf32", "bf16"):
        A = ip.blockwise_inverse(L, ip.Scheme(fmt, 16, (fmt, fmt), "fp32"))
        errs[fmt] = ip.rel_err(A, exact).max().item()
    assert errs["fp32"] < errs["tf32"] < errs["bf16"]
