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


# sequences per call of the float64 references in test_4096_short_sequences: for all 4096 at once (206k tokens, 16
# v-heads) their float64 tensors beside the op's outputs and autograd's saved tensors took more than an 80 GB H100 has
REF_GROUP = 512


def grouped_references(p, cu, do, dht):
    """o, the final states and (dq, dk, dv, dg, dbeta, dh0) of the float64 references, REF_GROUP sequences per call,
    concatenated: the tokens [0, cu[-1]) and every sequence's state"""
    N = cu.numel() - 1
    parts = []
    for a in range(0, N, REF_GROUP):
        b = min(a + REF_GROUP, N)
        t0, t1 = int(cu[a]), int(cu[b])
        cu_g = cu[a:b + 1] - t0
        q, k, v, g, beta = (p[n][:, t0:t1] for n in ("q", "k", "v", "g", "beta"))
        h0 = p["initial_state"][a:b]
        o, ht = gdn_chunk_ref(q, k, v, g, beta, initial_state=h0, output_final_state=True, cu_seqlens=cu_g)
        grads = chunk_bwd_ref(q, k, v, chunk_local_cumsum_ref(g, cu_g), beta, do[:, t0:t1], dht[a:b], 128**-0.5,
                              h0, cu_g)
        parts.append((o, ht) + tuple(grads))
    return [torch.cat([part[j] for part in parts], dim=1 if j not in (1, 7) else 0) for j in range(len(parts[0]))]


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

    end = sum(lengths)
    o_ref, ht_ref, *grads_ref = grouped_references(p, cu, do, dht)
    for name, got, want in (("o", o[:, :end], o_ref), ("final_state", ht, ht_ref)):
        err = record(name, rel_err(got, want), what)
        assert err <= TOL[name], f"{what}: {name} rel err {err:.3e}"
    assert torch.equal(o[:, end:], torch.zeros_like(o[:, end:]))

    for name, want in zip(("q", "k", "v", "g", "beta", "initial_state"), grads_ref):
        label = f"d{name}" if name != "initial_state" else "dh0"
        got = leaves[name].grad
        if name != "initial_state":  # the padding tail's gradients are 0
            assert torch.equal(got[:, end:], torch.zeros_like(got[:, end:])), f"{what}: {label} of the padding tail"
            got = got[:, :end]
        err = record(label, rel_err(got, want), what)
        assert err <= TOL["grad"], f"{what}: {label} rel err {err:.3e}"
