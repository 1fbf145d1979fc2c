"""Fixed-case checks of `flashqla.chunk_gated_delta_rule` against float64 references, shared by the
property-based tests (gdn_properties.py draws the cases) and the edge-shape tests.

A `Case` is one problem: a dense batch (B rows of T tokens) or packed varlen sequences (B = 1, `lengths`,
tokens after their sum are padding), H q/k heads and HV = H * group v-heads, the dtype, the gate kind,
initial state on/off, output_final_state on/off, the state layout, l2norm in the kernel on/off, a seed.
References: the float64 token recurrence (forward; the chunked form beyond 2048 tokens) and autograd of
the float64 chunked forward (backward; independent of the hand-written backward that the CPU op path
runs, and equal to autograd of the recurrence to 1e-10, tests/test_reference.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

import flashqla
from flashqla.reference import gdn_chunk_ref, gdn_recurrent_ref, l2norm
from gdn_inputs import make_problem, ragged_cu_seqlens, record, rel_err

GRAD_NAMES = ("q", "k", "v", "g", "beta", "initial_state")
RECURRENT_MAX_TOKENS = 2048


@dataclass(frozen=True)
class Case:
    B: int
    T: int
    H: int
    HV: int
    lengths: tuple[int, ...] | None  # packed sequences (B = 1) when set; tokens after their sum are padding
    h0: bool
    final: bool
    v_first: bool
    l2: bool
    gate: str
    dtype: torch.dtype
    seed: int

    @property
    def N(self) -> int:
        return self.B if self.lengths is None else len(self.lengths)

    @property
    def used(self) -> int:
        """Tokens that belong to a sequence (the rest of B*T is padding)."""
        return self.B * self.T if self.lengths is None else sum(self.lengths)


def build(case: Case, device: str) -> tuple[dict, torch.Tensor | None]:
    torch.manual_seed(case.seed)
    p = make_problem(case.B, case.T, case.H, case.HV, dtype=case.dtype, device=device, gate=case.gate, h0=case.h0,
                     N=case.N, normalize=not case.l2)
    cu = None if case.lengths is None else ragged_cu_seqlens(list(case.lengths), device)
    return p, cu


def _kernel_qk(q, k, l2: bool):
    return (l2norm(q), l2norm(k)) if l2 else (q, k)


def _l2norm_as_api(x64: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """float64 l2norm whose value is the API's (fp32 statistics, rounded to q's dtype before the kernels)
    and whose gradient is float64's (rounding passes gradients through). Without the rounding in the
    reference, a small q.k (random unit vectors: ~0.09) turns the 2^-9 rounding of q and k into a ~2%
    error of the tokens' beta and gate gradients."""
    exact = l2norm(x64)
    return exact + (l2norm(x64.detach().to(dtype)).double() - exact).detach()


def check_forward(case: Case, device: str, tol_o: float, tol_state: float) -> None:
    p, cu = build(case, device)
    o, ht = flashqla.chunk_gated_delta_rule(**p, output_final_state=case.final, cu_seqlens=cu,
                                            state_v_first=case.v_first, use_qk_l2norm_in_kernel=case.l2)
    q, k = _kernel_qk(p["q"], p["k"], case.l2)
    ref = gdn_recurrent_ref if case.B * case.T <= RECURRENT_MAX_TOKENS else gdn_chunk_ref
    o_ref, ht_ref = ref(q, k, p["v"], p["g"], p["beta"], initial_state=p["initial_state"], output_final_state=True,
                        cu_seqlens=cu, state_v_first=case.v_first)
    assert o.shape == (case.B, case.T, case.HV, 128) and o.dtype == case.dtype
    err = record("o", rel_err(o, o_ref), f"property {case}")
    assert err <= tol_o, f"o rel err {err:.3e}"
    if case.lengths is not None:  # the padding tail is exactly 0
        assert torch.equal(o[:, case.used:], torch.zeros_like(o[:, case.used:]))
    if not case.final:
        assert ht is None
        return
    assert ht.shape == (case.N, case.HV, 128, 128) and ht.dtype == torch.float32
    err = record("final_state", rel_err(ht, ht_ref), f"property {case}")
    assert err <= tol_state, f"final_state rel err {err:.3e}"
    for n, length in enumerate(case.lengths or ()):
        if length == 0:  # an empty sequence hands its initial state (or zeros) through unchanged
            want = p["initial_state"][n] if case.h0 else torch.zeros_like(ht[n])
            assert torch.equal(ht[n], want.float())


def _grads(fn, p: dict, cast, do, dht) -> dict:
    leaves = {n: cast(p[n]).detach().clone().requires_grad_() for n in GRAD_NAMES if p[n] is not None}
    o, ht = fn(leaves)
    loss = (o.to(do.dtype) * do).sum()
    if dht is not None:
        loss = loss + (ht.to(dht.dtype) * dht).sum()
    if loss.requires_grad:  # not when no token and no state reaches the loss (a float64 reference of T = 0)
        loss.backward()
    return {n: leaves[n].grad if leaves[n].grad is not None else torch.zeros_like(leaves[n]) for n in leaves}


def check_backward(case: Case, device: str, tol: dict[str, float]) -> None:
    """All six gradients (dq, dk, dv, dg, dbeta, dh0: keys of `tol`) against autograd in float64."""
    p, cu = build(case, device)
    # loss weights exactly representable in o's dtype and in fp32, so that the op and the float64 reference
    # see the same dL/do and dL/dfinal_state (rounding them would dominate cancelling gradients such as dg)
    do = torch.randn(case.B, case.T, case.HV, 128, device=device).to(case.dtype).double()
    dht = (torch.randn(case.N, case.HV, 128, 128, device=device) / 8).double() if case.final else None
    got = _grads(lambda t: flashqla.chunk_gated_delta_rule(
        **t, output_final_state=case.final, cu_seqlens=cu, state_v_first=case.v_first,
        use_qk_l2norm_in_kernel=case.l2), p, lambda x: x, do, dht)

    def reference(t):
        q, k = t["q"], t["k"]
        if case.l2:
            q, k = _l2norm_as_api(q, case.dtype), _l2norm_as_api(k, case.dtype)
        return gdn_chunk_ref(q, k, t["v"], t["g"], t["beta"], initial_state=t.get("initial_state"),
                             output_final_state=True, cu_seqlens=cu, state_v_first=case.v_first)

    want = _grads(reference, p, lambda x: x.double(), do, dht)
    for n in want:
        assert got[n].shape == p[n].shape and got[n].dtype == p[n].dtype, n
        label = f"d{n}" if n != "initial_state" else "dh0"
        err = record(label, rel_err(got[n], want[n]), f"property {case}")
        assert err <= tol[label], f"{label} rel err {err:.3e}"
        if n != "initial_state" and case.lengths is not None:  # padding tokens get exactly zero gradient
            tail = got[n][:, case.used:]
            assert torch.equal(tail, torch.zeros_like(tail)), f"{label} on the padding tail"
