"""GPU backward (through autograd) against float64 gradients (GPU only; skipped elsewhere).

Loss = <o, dO> + <final_state, dht> with random dO, dht. Reference gradients: autograd of the
float64 token recurrence up to 1024 tokens, the written-out float64 chunked backward beyond (the two
agree to 1e-10, tests/test_reference.py). Tolerance: relative L2 error <= 2e-2 per gradient (the
issue's bound; the forward's bf16 GEMM operands, recomputed in the backward, set the floor).
"""

from __future__ import annotations

import pytest
import torch

import flashqla
from flashqla.reference import chunk_bwd_ref, chunk_local_cumsum_ref, gdn_recurrent_ref, l2norm
from gdn_inputs import backward_case, kernels_of, make_problem, ragged_cu_seqlens, record, rel_err

pytestmark = pytest.mark.gpu
DEV = "cuda"
NAMES = ("q", "k", "v", "g", "beta", "initial_state")
GRAD_TOL = 2e-2


def flashqla_grads(p, do, dht, **kw):
    leaves = {n: p[n].detach().clone().requires_grad_() for n in NAMES if p[n] is not None}
    o, ht = flashqla.chunk_gated_delta_rule(**{**p, **leaves}, output_final_state=True, **kw)
    ((o.float() * do).sum() + (ht * dht).sum()).backward()
    return {n: leaves[n].grad for n in leaves}


def reference_grads(p, do, dht, cu_seqlens=None, state_v_first=False, l2=False):
    tokens = p["q"].shape[0] * p["q"].shape[1]
    if l2 or tokens <= 1024:
        leaves = {n: p[n].detach().double().requires_grad_() for n in NAMES if p[n] is not None}
        q, k = (l2norm(leaves["q"]), l2norm(leaves["k"])) if l2 else (leaves["q"], leaves["k"])
        o, ht = gdn_recurrent_ref(q, k, leaves["v"], leaves["g"], leaves["beta"],
                                  initial_state=leaves.get("initial_state"), output_final_state=True,
                                  cu_seqlens=cu_seqlens, state_v_first=state_v_first)
        ((o * do.double()).sum() + (ht * dht.double()).sum()).backward()
        return {n: leaves[n].grad for n in leaves}
    gc = chunk_local_cumsum_ref(p["g"], cu_seqlens)
    got = chunk_bwd_ref(p["q"], p["k"], p["v"], gc, p["beta"], do, dht, p["q"].shape[-1] ** -0.5,
                        p["initial_state"], cu_seqlens, state_v_first)
    return {n: g for n, g in zip(NAMES, got) if g is not None}


def check_grads(p, got, ref, what):
    for n in ref:
        assert got[n] is not None and got[n].shape == p[n].shape and got[n].dtype == p[n].dtype, n
        err = record(f"d{n}" if n != "initial_state" else "dh0", rel_err(got[n], ref[n]), what)
        assert err <= GRAD_TOL, f"{what}: d{n} rel err {err:.3e}"


def run_case(p, what, cu_seqlens=None, state_v_first=False, l2=False):
    B, T, HV = p["v"].shape[:3]
    N = B if cu_seqlens is None else cu_seqlens.numel() - 1
    do = torch.randn(B, T, HV, 128, device=DEV)
    dht = torch.randn(N, HV, 128, 128, device=DEV) / 8
    got = flashqla_grads(p, do, dht, cu_seqlens=cu_seqlens, state_v_first=state_v_first,
                         use_qk_l2norm_in_kernel=l2)
    ref = reference_grads(p, do, dht, cu_seqlens, state_v_first, l2)
    check_grads(p, got, ref, what)
    return got


def run_ragged_case(H, HV, cp_segment_chunks, state_v_first, what):
    """Partial chunks, an empty sequence and a padding tail, segments as cp_segment_chunks says (0 off, > 0 forced, -1
    automatic): gdn's backward from the forward's own g_cumsum and A (chunk_gated_delta_rule_bwd) against the float64
    chunked backward, each gradient within the tolerance, and exactly zero gradients over the whole padding tail."""
    lengths, tail = [130, 0, 64, 77, 1000], 37
    N, T = len(lengths), sum(lengths) + tail
    cu = ragged_cu_seqlens(lengths, DEV)
    p = make_problem(1, T, H, HV, device=DEV, N=N)
    fwd, do, dht, scale, ref = backward_case(p, cu, state_v_first)
    got = flashqla.chunk_gated_delta_rule_bwd(
        p["q"], p["k"], p["v"], fwd.g_cumsum, p["beta"], fwd.A, do, dht, scale=scale,
        initial_state=p["initial_state"], cu_seqlens=cu, state_v_first=state_v_first,
        cp_segment_chunks=cp_segment_chunks)
    for name, want in zip(("dq", "dk", "dv", "dg", "dbeta", "dh0"), ref):
        err = record(name, rel_err(getattr(got, name), want), what)
        assert err <= GRAD_TOL, f"{what}: {name} rel err {err:.3e}"
    end = sum(lengths)
    for name in ("dq", "dk", "dv", "dg", "dbeta"):  # the whole padding tail gets exactly zero gradient
        t = getattr(got, name)
        assert torch.equal(t[:, end:], torch.zeros_like(t[:, end:])), name


def kernels_of_a_backward(p) -> set[str]:
    """The CUDA kernels one forward and backward of problem p ran."""
    leaves = {n: p[n].detach().clone().requires_grad_() for n in ("q", "k", "v", "g", "beta")}

    def step():
        o, _ = flashqla.chunk_gated_delta_rule(**leaves)
        o.float().sum().backward()

    return set(kernels_of(step))


def has_fused_kernel(gmax: int | None = None) -> bool:
    """The build has a fused backward (of key gmax, when given) for this GPU's kernel family."""
    if not torch.cuda.is_available():
        return False
    major, minor = torch.cuda.get_device_capability()
    return any(k["kernel"] == "gdn_bwd_fused" and k["family"] == f"sm{major}{minor}"
               and (gmax is None or k.get("key", {}).get("gmax") == gmax)
               for k in flashqla.build_manifest().get("kernels", []))


def check_setting_rejected(monkeypatch, name, value, H, HV):
    """A backward with environment setting `name` = value fails, naming the setting."""
    monkeypatch.setenv(name, value)
    p = make_problem(1, 100, H, HV, device=DEV)
    leaves = {n: p[n].detach().clone().requires_grad_() for n in ("q", "k", "v", "g", "beta")}
    o, _ = flashqla.chunk_gated_delta_rule(**leaves)
    with pytest.raises(RuntimeError, match=f"{name} must be 0 or 1"):
        o.float().sum().backward()


HEADS = [(2, 8), (4, 4), (16, 32), (16, 64)]


@pytest.mark.parametrize("H,HV", HEADS, ids=[f"H{h}-HV{hv}" for h, hv in HEADS])
@pytest.mark.parametrize("T", [1, 63, 64, 65, 1000, 4096])
def test_bwd_dense_single_sequence(T, H, HV):
    run_case(make_problem(1, T, H, HV, device=DEV), f"bwd B=1 T={T} H={H} HV={HV}")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("T", [65, 1000])
@pytest.mark.parametrize("B", [2, 3])
def test_bwd_dense_batch(B, T, dtype):
    run_case(make_problem(B, T, 2, 8, dtype=dtype, device=DEV), f"bwd B={B} T={T} H=2 HV=8 {dtype}")


@pytest.mark.parametrize("l2", [False, True], ids=["raw-qk", "l2norm"])
@pytest.mark.parametrize("state_v_first", [False, True], ids=["KV", "VK"])
@pytest.mark.parametrize("h0", [False, True], ids=["no-h0", "h0"])
def test_bwd_options(h0, state_v_first, l2):
    p = make_problem(1, 300, 2, 8, device=DEV, h0=h0, normalize=not l2)
    run_case(p, f"bwd T=300 h0={h0} v_first={state_v_first} l2={l2}", state_v_first=state_v_first, l2=l2)


VARLEN = {
    "ragged+tail": ([1, 0, 130, 64, 500, 63], 77),
    "many-short": ([17, 1, 0, 0, 250, 3] * 3, 100),
    "one+long-tail": ([700], 300),
}


@pytest.mark.parametrize("H,HV", [(2, 8), (16, 32)], ids=["H2-HV8", "H16-HV32"])
@pytest.mark.parametrize("mix", list(VARLEN))
def test_bwd_varlen(mix, H, HV):
    lengths, tail = VARLEN[mix]
    cu = ragged_cu_seqlens(lengths, DEV)
    p = make_problem(1, sum(lengths) + tail, H, HV, device=DEV, N=len(lengths))
    got = run_case(p, f"bwd varlen {mix} H={H} HV={HV}", cu_seqlens=cu)
    end = sum(lengths)
    for n in ("q", "k", "v", "g", "beta"):  # the whole padding tail gets exactly zero gradient
        assert torch.equal(got[n][:, end:], torch.zeros_like(got[n][:, end:])), n


def test_bwd_long_sequence():
    run_case(make_problem(1, 16384, 16, 32, device=DEV), "bwd B=1 T=16384 H=16 HV=32")


def test_bwd_mild_gate_fp16():
    run_case(make_problem(1, 2000, 4, 16, dtype=torch.float16, device=DEV, gate="mild"), "bwd mild fp16")


def test_bwd_deterministic():
    """With auto_cp=False (and today always) the backward is bitwise identical run to run."""
    p = make_problem(1, 3000, 4, 16, device=DEV)
    do = torch.randn(1, 3000, 16, 128, device=DEV)
    dht = torch.randn(1, 16, 128, 128, device=DEV)
    first = flashqla_grads(p, do, dht, auto_cp=False)
    for _ in range(3):
        again = flashqla_grads(p, do, dht, auto_cp=False)
        for n in first:
            assert torch.equal(first[n], again[n]), n
