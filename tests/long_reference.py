"""Float64 references for problems too large for one reference call (tests/test_huge_gpu.py), built from
the public pieces of flashqla.reference and run on the GPU:

* `forward`: the chunked forward of one sequence, segment by segment. Segments start at multiples of 64
  tokens from the sequence start, so the chunking is exactly the kernels'; only the state is carried
  from one segment to the next, and o, g_cumsum and A are kept only when asked for.
* `head_group`: the sub-problem of a few v-heads (and the q/k heads they read), so that the reference
  runs on 1-10 heads of a 64-head problem.
* `huge_problem`: inputs generated straight in their dtype (no fp32 copy of a 17 GB tensor).
"""

from __future__ import annotations

import torch

from flashqla.reference import chunk_fwd_ref, chunk_local_cumsum_ref, kkt_solve_ref, l2norm
from gdn_inputs import make_gate

SEGMENT = 65536  # tokens per reference call (a multiple of 64)


def huge_problem(T: int, H: int, HV: int, N: int, device="cuda", dtype=torch.bfloat16) -> dict:
    """Like gdn_inputs.make_problem, with v drawn directly in `dtype` and q, k normalized head by head."""
    q = torch.empty(1, T, H, 128, dtype=dtype, device=device)
    k = torch.empty_like(q)
    for h in range(H):
        q[:, :, h] = l2norm(torch.randn(1, T, 128, device=device)).to(dtype)
        k[:, :, h] = l2norm(torch.randn(1, T, 128, device=device)).to(dtype)
    return dict(q=q, k=k, v=torch.randn(1, T, HV, 128, dtype=dtype, device=device),
                g=make_gate(1, T, HV, "strong", device), beta=torch.randn(1, T, HV, device=device).sigmoid(),
                initial_state=torch.randn(N, HV, 128, 128, device=device))


def head_group(p: dict, q_heads: list[int], v_heads: list[int]) -> dict:
    """The problem restricted to v_heads and the q/k heads they read. In the sub-problem v-head i reads q/k
    head i // (len(v_heads) // len(q_heads)); the caller lists the heads so that this matches the full
    problem (e.g. v-heads [0, 63] of 64 with q heads [0, 7] of 8)."""
    sub = dict(q=p["q"][:, :, q_heads], k=p["k"][:, :, q_heads], v=p["v"][:, :, v_heads], g=p["g"][:, :, v_heads],
               beta=p["beta"][:, :, v_heads])
    if p.get("initial_state") is not None:
        sub["initial_state"] = p["initial_state"][:, v_heads]
    return sub


def forward(p: dict, start: int, stop: int, scale: float, state: torch.Tensor | None,
            keep: tuple[str, ...] = ("o",)) -> tuple[dict, torch.Tensor]:
    """Tokens [start, stop) of one sequence of p ([1, T, ...] tensors) from `state` ([1, HV, K, V] or None)
    at `start`, which must be a multiple of 64 tokens after the sequence start.

    Returns ({name: [1, stop - start, ...] float64 for name in keep}, the state at `stop`) with keep drawn
    from "o", "g_cumsum", "A"."""
    pieces: dict[str, list[torch.Tensor]] = {name: [] for name in keep}
    for a in range(start, stop, SEGMENT):
        s = slice(a, min(a + SEGMENT, stop))
        gc = chunk_local_cumsum_ref(p["g"][:, s])
        A = kkt_solve_ref(p["k"][:, s], p["beta"][:, s])
        o, state = chunk_fwd_ref(p["q"][:, s], p["k"][:, s], p["v"][:, s], gc, p["beta"][:, s], A, scale, state)
        for name, x in (("o", o), ("g_cumsum", gc), ("A", A)):
            if name in pieces:
                pieces[name].append(x)
        del o, gc, A
    return {name: torch.cat(xs, 1) for name, xs in pieces.items()}, state
