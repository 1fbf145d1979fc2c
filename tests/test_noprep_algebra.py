"""The chunk algebra of the forward without the chunk prep (tilelang_src/sm90/gdn_fwd_noprep.py, docs/fwd_noprep.md),
in float64 on the CPU: M gated above the diagonal by exp(gc_m - gc_j) before the solve gives the gated inverse
A_g = Gamma * A0, and
the chain SK -> W -> U = (A_g beta_col) W -> S' = gamma_last S + K^T diag(r) U, O = scale gamma (Q S) + P U reproduces
the token recurrence (python/flashqla/reference.py), on chunks with partial tails, strong and absent decay and an
initial state. A wrong gate orientation, a missing beta or r fails it by far more than rounding."""

from __future__ import annotations

import pytest
import torch

from flashqla.reference import gdn_recurrent_ref
from gdn_inputs import make_problem, ragged_cu_seqlens

BT = 64


def gated_inverse(k: torch.Tensor, beta: torch.Tensor, gc: torch.Tensor) -> torch.Tensor:
    """A_g of one chunk as the kernel forms it: M_g[j, m] = exp(gc_m - gc_j) (K K^T)[j, m] read above the
    diagonal, T[m, j] = beta_m M_g[j, m] (m > j), A_g = (I + T)^-1."""
    n = k.shape[0]
    m_g = torch.exp(gc[None, :] - gc[:, None]) * (k @ k.T)
    upper = torch.triu(torch.ones(n, n, dtype=torch.bool), 1)
    t = (beta[:, None] * torch.where(upper, m_g, 0.0).T)  # T[m, j] = beta_m M_g[j, m] for m > j
    return torch.linalg.inv(torch.eye(n, dtype=k.dtype) + t)


def noprep_forward(q, k, v, g, beta, scale, h0, lengths):
    """o [T, V] and the final states of one head, chunk by chunk with the kernel's equations (float64)."""
    outs, finals, t0 = [], [], 0
    for n, length in enumerate(lengths):
        s = h0[n].clone()  # [K, V]
        for c0 in range(t0, t0 + length, BT):
            c1 = min(c0 + BT, t0 + length)
            qc, kc, vc, bc = q[c0:c1], k[c0:c1], v[c0:c1], beta[c0:c1]
            gc = g[c0:c1].cumsum(0)
            a_g = gated_inverse(kc, bc, gc)
            gam = torch.exp(gc)
            r = torch.exp(gc[-1] - gc)
            tri = torch.tril(torch.ones(c1 - c0, c1 - c0, dtype=torch.bool))
            p = torch.where(tri, scale * torch.exp(gc[:, None] - gc[None, :]) * (qc @ kc.T), 0.0)
            w = vc - gam[:, None] * (kc @ s)  # the residual
            u = (a_g * bc[None, :]) @ w  # G W
            outs.append(scale * gam[:, None] * (qc @ s) + p @ u)
            s = gam[-1] * s + kc.T @ (r[:, None] * u)
        finals.append(s)
        t0 += length
    return torch.cat(outs) if outs else q.new_zeros(0, v.shape[1]), torch.stack(finals)


@pytest.mark.parametrize("gate", ["strong", "mild", "growing"])
@pytest.mark.parametrize("lengths", [[200], [1, 64, 130, 65], [300, 0, 7]])
def test_noprep_chunk_algebra_equals_the_recurrence(lengths, gate):
    """Four v-heads of one qk-head: with the strong gate a quarter of the heads has no decay, the rest decay fast;
    growing: g > 0 on some tokens (not a GDN model's gate, but the API takes it: the kernel's gating must not assume
    the sign)."""
    T_, HV = sum(lengths), 4
    p = make_problem(1, T_, 1, HV, gate="mild" if gate == "growing" else gate, N=len(lengths))
    if gate == "growing":
        p["g"] = p["g"] + 0.05 * torch.rand_like(p["g"])
    cu = ragged_cu_seqlens(lengths, "cpu")
    o_ref, ht_ref = gdn_recurrent_ref(p["q"].double(), p["k"].double(), p["v"].double(), p["g"].double(),
                                      p["beta"].double(), scale=128 ** -0.5, initial_state=p["initial_state"].double(),
                                      output_final_state=True, cu_seqlens=cu)
    assert p["g"][0].abs().sum(0).count_nonzero() >= 2  # decaying heads are checked
    for h in range(HV):
        o, ht = noprep_forward(p["q"][0, :, 0].double(), p["k"][0, :, 0].double(), p["v"][0, :, h].double(),
                               p["g"][0, :, h].double(), p["beta"][0, :, h].double(), 128 ** -0.5,
                               p["initial_state"][:, h].double(), lengths)
        assert torch.allclose(o, o_ref[0, :, h], rtol=0, atol=1e-9 * max(1.0, o_ref.abs().max().item())), h
        assert torch.allclose(ht, ht_ref[:, h], rtol=0, atol=1e-9 * max(1.0, ht_ref.abs().max().item())), h


def test_gated_solve_is_the_gated_ungated_inverse():
    """A_g = diag(e^gc) A0 diag(e^-gc), A0 = (I + strictLower(diag(beta) K K^T))^-1 (the chunk prep's A)."""
    g = torch.Generator().manual_seed(3)
    k = torch.nn.functional.normalize(torch.randn(BT, 128, generator=g, dtype=torch.float64), dim=-1)
    beta = torch.rand(BT, generator=g, dtype=torch.float64)
    gc = (-torch.rand(BT, generator=g, dtype=torch.float64) * 0.5).cumsum(0)
    a0 = torch.linalg.inv(torch.eye(BT, dtype=torch.float64) + torch.tril(beta[:, None] * (k @ k.T), -1))
    want = torch.exp(gc)[:, None] * a0 * torch.exp(-gc)[None, :]
    assert torch.allclose(gated_inverse(k, beta, gc), want, rtol=0, atol=1e-12)
    # gating M the other way round (exp(gc_i - gc_j) above the diagonal) is not the same inverse
    m_wrong = torch.exp(gc[:, None] - gc[None, :]) * (k @ k.T)
    t = beta[:, None] * torch.triu(m_wrong, 1).T
    wrong = torch.linalg.inv(torch.eye(BT, dtype=torch.float64) + t)
    assert (wrong - want).abs().max() > 1e-3
