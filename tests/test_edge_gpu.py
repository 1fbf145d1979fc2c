"""Edge shapes on the SM90 kernels (GPU only; marked gpu and edge): a single token, sequences shorter than
one 64-token chunk, no token or no sequence at all, and 4096 packed sequences of 1-100 tokens; forward and
backward against float64 (the checks of tests/gdn_checks.py on fixed cases; the float64 chunked
forward and backward for the 4096 sequences). The 1M-token and >2^31-element shapes: test_huge_gpu.py."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import flashqla
from flashqla.reference import chunk_bwd_ref, chunk_local_cumsum_ref, gdn_chunk_ref
from gdn_inputs import TOL, make_problem, ragged_cu_seqlens, record, rel_err
from gdn_checks import Case, check_backward, check_forward

pytestmark = [pytest.mark.gpu, pytest.mark.edge]
DEV = "cuda"
GRAD_TOL = dict.fromkeys(("dq", "dk", "dv", "dg", "dbeta", "dh0"), TOL["grad"])
BASE = Case(B=1, T=1, H=4, HV=32, lengths=None, h0=True, final=True, v_first=False, l2=False, gate="strong",
            dtype=torch.bfloat16, seed=0)


def run(case: Case) -> None:
    check_forward(case, DEV, TOL["o"], TOL["final_state"])
    check_backward(case, DEV, GRAD_TOL)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("layout", [dict(B=1, T=1), dict(B=3, T=1), dict(T=64 + 7, lengths=(1,) * 64)],
                         ids=["B1", "B3", "64x1-token+tail"])
def test_single_token(layout, dtype):
    run(dataclasses.replace(BASE, dtype=dtype, **layout))


@pytest.mark.parametrize("options", [dict(), dict(v_first=True, l2=True), dict(h0=False, gate="mild")],
                         ids=["default", "VK-l2norm", "no-h0-mild"])
@pytest.mark.parametrize("T", [2, 17, 63])
def test_shorter_than_a_chunk(T, options):
    run(dataclasses.replace(BASE, B=2, T=T, H=4, HV=16, **options))


def test_varlen_all_shorter_than_a_chunk():
    lengths = (1, 63, 17, 0, 40, 2)
    run(dataclasses.replace(BASE, T=sum(lengths) + 9, H=2, HV=8, lengths=lengths))


@pytest.mark.parametrize("layout", [dict(T=0), dict(T=0, B=2), dict(T=100, lengths=()), dict(T=0, lengths=(0, 0))],
                         ids=["T0", "B2-T0", "no-sequence+padding", "empty-sequences"])
def test_nothing_to_compute(layout):
    """No token (the final state is the initial state, dh0 = dht) or no sequence (everything is padding)."""
    run(dataclasses.replace(BASE, H=2, HV=8, **layout))


def test_4096_short_sequences():
    lengths = torch.randint(1, 101, (4096,), generator=torch.Generator().manual_seed(0)).tolist()
    T, H, HV = sum(lengths) + 50, 4, 16
    cu = ragged_cu_seqlens(lengths, DEV)
    p = make_problem(1, T, H, HV, device=DEV, N=len(lengths))
    what = f"4096 sequences of 1-100 tokens, T={T}"
    do = torch.randn(1, T, HV, 128, device=DEV).bfloat16()
    dht = torch.randn(len(lengths), HV, 128, 128, device=DEV) / 8
    leaves = {n: t.detach().clone().requires_grad_() for n, t in p.items()}
    o, ht = flashqla.chunk_gated_delta_rule(**leaves, output_final_state=True, cu_seqlens=cu)
    ((o.float() * do.float()).sum() + (ht * dht).sum()).backward()

    o_ref, ht_ref = gdn_chunk_ref(**p, output_final_state=True, cu_seqlens=cu)
    for name, got, want in (("o", o, o_ref), ("final_state", ht, ht_ref)):
        err = record(name, rel_err(got, want), what)
        assert err <= TOL[name], f"{what}: {name} rel err {err:.3e}"
    end = sum(lengths)
    assert torch.equal(o[:, end:], torch.zeros_like(o[:, end:]))

    ref = chunk_bwd_ref(p["q"], p["k"], p["v"], chunk_local_cumsum_ref(p["g"], cu), p["beta"], do, dht, 128**-0.5,
                        p["initial_state"], cu)
    for name, want in zip(("q", "k", "v", "g", "beta", "initial_state"), ref):
        label = f"d{name}" if name != "initial_state" else "dh0"
        err = record(label, rel_err(leaves[name].grad, want), what)
        assert err <= TOL["grad"], f"{what}: {label} rel err {err:.3e}"
