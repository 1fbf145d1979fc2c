"""The chunked float64 reference against the token recurrence (CPU): the two forms of the same
function must agree to rounding (<= 1e-10), on every feature the kernels implement."""

from __future__ import annotations

import pytest
import torch

from flashqla.reference import gdn_chunk_ref, gdn_recurrent_ref
from gdn_inputs import make_problem, ragged_cu_seqlens, rel_err

CASES = {
    "T1": dict(B=1, T=1, H=2, HV=4),
    "T63-grouped": dict(B=1, T=63, H=1, HV=3),
    "T64": dict(B=2, T=64, H=2, HV=2),
    "T65-B3": dict(B=3, T=65, H=2, HV=4),
    "T200": dict(B=1, T=200, H=2, HV=8),
}


@pytest.mark.parametrize("state_v_first", [False, True], ids=["KV", "VK"])
@pytest.mark.parametrize("h0", [False, True], ids=["no-h0", "h0"])
@pytest.mark.parametrize("gate", ["strong", "mild"])
@pytest.mark.parametrize("case", list(CASES))
def test_chunked_equals_recurrent_dense(case, gate, h0, state_v_first):
    c = CASES[case]
    p = make_problem(c["B"], c["T"], c["H"], c["HV"], gate=gate, h0=h0)
    p = {k: (v.double() if v is not None else None) for k, v in p.items()}
    kw = dict(output_final_state=True, state_v_first=state_v_first, scale=0.1)
    o_r, h_r = gdn_recurrent_ref(**p, **kw)
    o_c, h_c = gdn_chunk_ref(**p, **kw)
    assert rel_err(o_c, o_r) <= 1e-10
    assert rel_err(h_c, h_r) <= 1e-10


@pytest.mark.parametrize("lengths,tail", [([1, 0, 130, 64, 63], 77), ([0], 5), ([129, 1], 0)])
def test_chunked_equals_recurrent_varlen(lengths, tail):
    cu = ragged_cu_seqlens(lengths, "cpu")
    p = make_problem(1, sum(lengths) + tail, 2, 4, N=len(lengths))
    p = {k: v.double() for k, v in p.items()}
    o_r, h_r = gdn_recurrent_ref(**p, output_final_state=True, cu_seqlens=cu)
    o_c, h_c = gdn_chunk_ref(**p, output_final_state=True, cu_seqlens=cu)
    assert rel_err(o_c, o_r) <= 1e-10 and rel_err(h_c, h_r) <= 1e-10
    assert torch.equal(o_r[:, sum(lengths):], torch.zeros_like(o_r[:, sum(lengths):]))


def test_recurrence_definition_one_token():
    """o_1 = scale * (exp(g) S0 + beta k (v - exp(g) S0^T k)^T)^T q, written out by hand."""
    p = make_problem(1, 1, 1, 1)
    p = {k: v.double() for k, v in p.items()}
    q, k, v, g, b, S0 = p["q"][0, 0, 0], p["k"][0, 0, 0], p["v"][0, 0, 0], p["g"][0, 0, 0], p["beta"][0, 0, 0], \
        p["initial_state"][0, 0]
    S = torch.exp(g) * S0
    S = S + b * torch.outer(k, v - S.t() @ k)
    o, ht = gdn_recurrent_ref(**p, scale=0.5, output_final_state=True)
    assert torch.allclose(o[0, 0, 0], 0.5 * S.t() @ q, rtol=1e-12, atol=1e-12)
    assert torch.allclose(ht[0, 0], S, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("state_v_first", [False, True], ids=["KV", "VK"])
@pytest.mark.parametrize("h0", [False, True], ids=["no-h0", "h0"])
@pytest.mark.parametrize("lengths,tail", [([200], 0), ([1, 0, 130, 64, 63], 7)], ids=["dense", "varlen"])
def test_chunked_backward_equals_autograd_of_recurrence(lengths, tail, h0, state_v_first):
    """The written-out chunked backward against autograd of the token recurrence, all six gradients."""
    from flashqla.reference import chunk_bwd_ref, chunk_local_cumsum_ref

    cu = ragged_cu_seqlens(lengths, "cpu")
    T = sum(lengths) + tail
    p = make_problem(1, T, 1, 2, N=len(lengths), h0=h0)
    p = {k: (v.double() if v is not None else None) for k, v in p.items()}
    do = torch.randn(1, T, 2, 128, dtype=torch.float64)
    dht = torch.randn(len(lengths), 2, 128, 128, dtype=torch.float64) / 8
    names = [n for n in ("q", "k", "v", "g", "beta", "initial_state") if p[n] is not None]
    leaves = {n: p[n].clone().requires_grad_() for n in names}
    o, ht = gdn_recurrent_ref(**{**p, **leaves}, scale=0.1, output_final_state=True, cu_seqlens=cu,
                              state_v_first=state_v_first)
    ((o * do).sum() + (ht * dht).sum()).backward()
    gc = chunk_local_cumsum_ref(p["g"], cu)
    got = chunk_bwd_ref(p["q"], p["k"], p["v"], gc, p["beta"], do, dht, 0.1, p["initial_state"], cu, state_v_first)
    for name, g_ in zip(("q", "k", "v", "g", "beta", "initial_state"), got):
        if name in leaves:
            assert rel_err(g_, leaves[name].grad) <= 1e-10, name
        else:
            assert g_ is None
