"""benchmarks/ablate.py's dvd_prefill: the dVd it puts in dv's rows for the chunk gradient's dvd_in specs is the one the
kernel forms itself, dVd = r * (K dS1) + Pg^T dO per chunk and v-head (docs/gdn_chunk_derivation.md, "Backward"),
checked against a float64 loop over the chunks with the kernel's one rounding of an intermediate (Pg to bf16)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import ablate  # noqa: E402


@pytest.mark.parametrize("H,HV", [(1, 2), (2, 2)])
def test_dvd_prefill_matches_a_float64_loop(H, HV):
    BT = 64
    x, _, _ = ablate.bwd_chunk_inputs(2 * BT, H, HV, device="cpu")
    x["dv"].fill_(float("nan"))
    ablate.dvd_prefill(x, H, HV)
    for c in range(2):
        rows = slice(c * BT, (c + 1) * BT)
        for hv in range(HV):
            hq = hv // (HV // H)
            q, k = x["q"][rows, hq].double(), x["k"][rows, hq].double()
            g = x["g_cumsum"][rows, hv].double()
            r = torch.exp(g[-1] - g)
            gamma = torch.exp(g[:, None] - g[None, :]).tril()
            pg = (x["scale"] * gamma * (q @ k.T)).to(torch.bfloat16).double()
            want = r[:, None] * (k @ x["dh"][c, hv].double()) + pg.T @ x["d_o"][rows, hv].double()
            got = x["dv"][rows, hv].double()
            # dv holds dVd in bf16: one rounding (relative 2^-9) of each element, here bounded by the largest
            assert (got - want).abs().max() <= 2.0**-8 * want.abs().max(), (c, hv)
