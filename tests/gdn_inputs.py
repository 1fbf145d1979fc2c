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

import torch
import torch.nn.functional as F

from flashqla._ops import kernel_family
from flashqla.reference import l2norm

TOL = {"o": 1e-2, "final_state": 1e-2, "g_cumsum": 1e-5, "A": 1e-2, "grad": 2e-2}


def has_wide_kernel() -> bool:
    """The 128-wide forward exists in the sm90 family only: an sm90 GPU, and no other family chosen through
    FLASHQLA_KERNEL_FAMILY (a check build runs the sm100 and sm120 programs on Hopper that way)."""
    return torch.cuda.is_available() and kernel_family(torch.cuda.get_device_capability()) == "sm90"


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
