"""Random GDN problems and the error metric shared by the tests.

Tolerances (relative L2 error against float64, one number per tensor, justified once):
* o, final state: 1e-2. Rounding the exact result to bf16 alone gives about 1.6e-3; the kernels
  also round their GEMM operands (state snapshot, W, Vd, Gamma*A*beta, scale*Gamma*P) to the input
  dtype, which the peers show lands at 3-4e-3. A wrong mask, gate or index gives errors of order 1.
* g_cumsum: 1e-5 (fp32 sums of at most 64 terms).
* A: 1e-2 (the fp32 inverse rounded to bf16/fp16, about 2e-3, with margin).
* every gradient: 2e-2 (the issue's bound; the forward's bf16 GEMM operands, recomputed in the
  backward, set the floor).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from flashqla._ops import kernel_family
from flashqla.reference import chunk_bwd_ref, chunk_local_cumsum_ref, gdn_chunk_ref, gdn_recurrent_ref, l2norm

TOL = {"o": 1e-2, "final_state": 1e-2, "g_cumsum": 1e-5, "A": 1e-2, "grad": 2e-2}


def has_wide_kernel() -> bool:
    """The 128-wide forward exists in the sm90 family only: an sm90 GPU, and no other family chosen through
    FLASHQLA_KERNEL_FAMILY (a check build runs the sm100 and sm120 programs on Hopper that way)."""
    return torch.cuda.is_available() and kernel_family(torch.cuda.get_device_capability()) == "sm90"


def needs_sm90_kernel(what: str):
    """Skip marker for tests of an sm90-family-only kernel (`what`, e.g. "the 128-wide forward"), the reason naming
    why: no GPU, or another kernel family here."""
    return pytest.mark.skipif(
        not has_wide_kernel(), reason="GPU test skipped: no CUDA GPU" if not torch.cuda.is_available()
        else f"{what} is an sm90-family kernel (the kernel family here is not sm90)")


def packed_forward(p: dict, cu: torch.Tensor, monkeypatch, env: dict, state_v_first: bool = False,
                   cp_segment_chunks: int = -1):
    """flashqla.chunk_gated_delta_rule_fwd on problem p (packed sequences cu, final states out) with the environment
    settings `env` (e.g. FLASHQLA_FWD_BLOCK_V) for this call only."""
    import flashqla

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    out = flashqla.chunk_gated_delta_rule_fwd(
        p["q"], p["k"], p["v"], p["g"], p["beta"], initial_state=p["initial_state"], output_final_state=True,
        cu_seqlens=cu, state_v_first=state_v_first, cp_segment_chunks=cp_segment_chunks)
    for name in env:
        monkeypatch.delenv(name)
    return out


def forward_reference(p: dict, cu: torch.Tensor, lengths: list[int], state_v_first: bool = False):
    """(o, final state) of problem p in float64: the token recurrence up to 2048 tokens, the chunked form beyond."""
    fn = gdn_recurrent_ref if sum(lengths) <= 2048 else gdn_chunk_ref
    return fn(p["q"], p["k"], p["v"], p["g"], p["beta"], initial_state=p["initial_state"], output_final_state=True,
              cu_seqlens=cu, state_v_first=state_v_first)


def backward_case(p: dict, cu: torch.Tensor, state_v_first: bool = False, states: bool = True):
    """What a backward test of problem p starts from: the forward's own g_cumsum and A (chunk_gated_delta_rule_fwd
    without context parallelism), a random do and, with `states`, a random dht ([N, HV, 128, 128] / 8; p's
    initial_state used, else neither), and the float64 chunked backward of those. Returns (fwd, do, dht, scale, ref)."""
    import flashqla

    N, HV = cu.numel() - 1, p["v"].shape[2]
    h0 = p["initial_state"] if states else None
    fwd = flashqla.chunk_gated_delta_rule_fwd(p["q"], p["k"], p["v"], p["g"], p["beta"], initial_state=h0,
                                              cu_seqlens=cu, state_v_first=state_v_first, cp_segment_chunks=0)
    do = torch.randn_like(p["v"])
    dht = torch.randn(N, HV, 128, 128, device=p["v"].device) / 8 if states else None
    scale = 128 ** -0.5
    ref = chunk_bwd_ref(p["q"], p["k"], p["v"], fwd.g_cumsum, p["beta"], do.to(p["v"].dtype), dht, scale, h0, cu,
                        state_v_first)
    return fwd, do, dht, scale, ref


def check_training_gradients(p: dict, cu: torch.Tensor, leaves: dict, o: torch.Tensor, ht: torch.Tensor,
                             what: str) -> None:
    """Backward from o and the final states ht (random cotangents), then every gradient of `leaves` (q, k, v, g,
    beta, initial_state of problem p) against the float64 chunked backward, within TOL["grad"]."""
    do = torch.randn_like(o)
    dht = torch.randn_like(ht) / 8
    ((o.float() * do.float()).sum() + (ht * dht).sum()).backward()
    ref = chunk_bwd_ref(p["q"], p["k"], p["v"], chunk_local_cumsum_ref(p["g"], cu), p["beta"], do, dht,
                        128 ** -0.5, p["initial_state"], cu)
    for name, want in zip(("q", "k", "v", "g", "beta", "initial_state"), ref):
        err = record(f"d{name}" if name != "initial_state" else "dh0", rel_err(leaves[name].grad, want), what)
        assert err <= TOL["grad"], f"{what}: d{name} rel err {err:.3e}"


# worst error seen per tensor in this session: name -> (error, case); printed by conftest
WORST: dict[str, tuple[float, str]] = {}


def record(name: str, err: float, case: str) -> float:
    if err > WORST.get(name, (-1.0, ""))[0]:
        WORST[name] = (err, case)
    return err


def check_packed_forward(out, o_ref: torch.Tensor, ht_ref: torch.Tensor, initial_state: torch.Tensor,
                         lengths: list[int], what: str) -> None:
    """A packed forward's o and final state against float64 (TOL), o zero on the padding tail after the sequences,
    and every empty sequence's final state its initial state exactly."""
    assert record("o", rel_err(out.o, o_ref), what) <= TOL["o"], what
    assert record("final_state", rel_err(out.final_state, ht_ref), what) <= TOL["final_state"], what
    end = sum(lengths)
    assert torch.equal(out.o[:, end:], torch.zeros_like(out.o[:, end:])), f"{what}: padding tail of o"
    for n, length in enumerate(lengths):
        if length == 0:  # an empty sequence hands its initial state through unchanged
            assert torch.equal(out.final_state[n], initial_state[n].float()), f"{what}: empty sequence"


def kernels_of(fn) -> list[str]:
    """The names of the CUDA kernels that fn() ran (torch.profiler)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]


def rel_err(x: torch.Tensor, ref: torch.Tensor) -> float:
    """||x - ref|| / ||ref|| in float64; NaN anywhere in x gives inf."""
    x = x.detach().double()
    if not torch.isfinite(x).all():
        return float("inf")
    denom = ref.double().norm()
    return float((x - ref.double()).norm() / denom) if denom > 0 else float((x - ref.double()).norm())


def make_gate(B: int, T: int, HV: int, kind: str, device) -> torch.Tensor:
    """Per-token log decay [B, T, HV] (fp32).

    'strong': per-head rates from 0 to 16 (Qwen-like A_log spread), values clamped at -20,
    with a quarter of the heads (at least head 0) at g = 0. 'mild': logsigmoid(randn) / 16.
    """
    if kind == "mild":
        return F.logsigmoid(torch.randn(B, T, HV, device=device)) / 16
    rate = torch.linspace(0, 16, HV, device=device)
    g = -rate * F.softplus(0.5 * torch.randn(B, T, HV, device=device) + 1)
    g = g.clamp_min(-20)
    no_decay = torch.zeros(HV, dtype=torch.bool, device=device)
    no_decay[torch.randperm(HV, device=device)[: max(1, HV // 4)]] = True
    no_decay[0] = True
    return torch.where(no_decay, torch.zeros_like(g), g)


def make_problem(B: int, T: int, H: int, HV: int, *, dtype=torch.bfloat16, device="cpu", gate="strong",
                 h0: bool = True, state_v_first: bool = False, N: int | None = None, normalize: bool = True):
    """q, k l2-normalized (unless normalize=False), v randn, beta = sigmoid(randn), h0 randn."""
    q = torch.randn(B, T, H, 128, device=device)
    k = torch.randn(B, T, H, 128, device=device)
    if normalize:
        q, k = l2norm(q), l2norm(k)
    q, k = q.to(dtype), k.to(dtype)
    v = torch.randn(B, T, HV, 128, device=device).to(dtype)
    g = make_gate(B, T, HV, gate, device)
    beta = torch.randn(B, T, HV, device=device).sigmoid()
    N = B if N is None else N
    initial_state = torch.randn(N, HV, 128, 128, device=device) if h0 else None
    return dict(q=q, k=k, v=v, g=g, beta=beta, initial_state=initial_state)


def ragged_cu_seqlens(lengths: list[int], device) -> torch.Tensor:
    cu = [0]
    for n in lengths:
        cu.append(cu[-1] + n)
    return torch.tensor(cu, dtype=torch.int32, device=device)
