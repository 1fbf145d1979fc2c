"""Pure-PyTorch references for Gated DeltaNet, computed in float64.

Two independent forms of the same recurrence (docs/gdn_chunk_derivation.md):

* `gdn_recurrent_ref`: the token-by-token definition, the ground truth.
* `chunk_local_cumsum_ref`, `kkt_solve_ref`, `chunk_fwd_ref`, composed by `gdn_chunk_ref`:
  the chunked WY forward split the way the kernels split it, so that a failing kernel
  points at a stage. Their intermediates (the chunk-local cumsum and the ungated inverse A)
  are exactly what `torch.ops.flashqla.gdn_fwd` returns.

Shapes follow FLA: q, k [B, T, H, K]; v [B, T, HV, V]; g, beta [B, T, HV]; states
[N, HV, K, V] ([N, HV, V, K] with state_v_first). v-head h reads q/k head h // (HV // H).
Varlen input has B = 1 and cu_seqlens [N + 1]; tokens after cu_seqlens[-1] are padding
and get o = 0. This module depends on torch alone.
"""

from __future__ import annotations

import torch

CHUNK = 64


def l2norm(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """x / sqrt(sum(x^2) + eps) over the last dim; statistics in fp32 (or x's dtype if wider)."""
    xf = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
    return (xf * torch.rsqrt((xf * xf).sum(-1, keepdim=True) + eps)).to(x.dtype)


def _sequences(T: int, B: int, cu_seqlens: torch.Tensor | None) -> list[tuple[int, int, int]]:
    """(batch index, start, end) of every sequence."""
    if cu_seqlens is None:
        return [(b, 0, T) for b in range(B)]
    cu = [int(x) for x in cu_seqlens.tolist()]
    return [(0, cu[i], cu[i + 1]) for i in range(len(cu) - 1)]


def _expand_heads(x: torch.Tensor, HV: int) -> torch.Tensor:
    # [B, T, H, K] -> [B, T, HV, K], v-head h uses q/k head h // (HV // H)
    return x.repeat_interleave(HV // x.shape[2], dim=2)


def gdn_recurrent_ref(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    cu_seqlens: torch.Tensor | None = None,
    state_v_first: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Token-by-token GDN in float64: S <- exp(g_t) S; S <- S + beta_t k_t (v_t - S^T k_t)^T;
    o_t = scale * S^T q_t.

    Returns o [B, T, HV, V] (float64) and the final states [N, HV, K, V] (float64) or None.
    """
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    scale = K ** -0.5 if scale is None else scale
    qe, ke = _expand_heads(q.double(), HV), _expand_heads(k.double(), HV)
    vd, gd, bd = v.double(), g.double(), beta.double()
    o = torch.zeros(B, T, HV, V, dtype=torch.float64, device=q.device)
    seqs = _sequences(T, B, cu_seqlens)
    finals = []
    for n, (b, s, e) in enumerate(seqs):
        if initial_state is None:
            S = torch.zeros(HV, K, V, dtype=torch.float64, device=q.device)
        else:
            S = initial_state[n].double()
            S = S.transpose(-1, -2).clone() if state_v_first else S.clone()
        for t in range(s, e):
            S = S * torch.exp(gd[b, t])[:, None, None]
            err = vd[b, t] - torch.einsum("hkv,hk->hv", S, ke[b, t])  # [HV, V]
            S = S + bd[b, t][:, None, None] * ke[b, t][:, :, None] * err[:, None, :]
            o[b, t] = scale * torch.einsum("hkv,hk->hv", S, qe[b, t])
        finals.append(S.transpose(-1, -2) if state_v_first else S)
    final = torch.stack(finals) if output_final_state and finals else None
    if output_final_state and not finals:
        final = torch.zeros(0, HV, K, V, dtype=torch.float64, device=q.device)
    return o, final


def chunk_local_cumsum_ref(g: torch.Tensor, cu_seqlens: torch.Tensor | None = None,
                           chunk_size: int = CHUNK) -> torch.Tensor:
    """[B, T, HV] -> [B, T, HV] float64: inclusive cumsum of g inside each chunk; chunks start at
    each sequence's first token. Padding tokens get 0."""
    B, T, _ = g.shape
    out = torch.zeros_like(g, dtype=torch.float64)
    for b, s, e in _sequences(T, B, cu_seqlens):
        for c0 in range(s, e, chunk_size):
            c1 = min(c0 + chunk_size, e)
            out[b, c0:c1] = g[b, c0:c1].double().cumsum(0)
    return out


def chunk_local_reverse_cumsum_ref(x: torch.Tensor, cu_seqlens: torch.Tensor | None = None,
                                   chunk_size: int = CHUNK) -> torch.Tensor:
    """The adjoint of `chunk_local_cumsum_ref`: suffix sums inside each chunk ([B, T, HV])."""
    B, T, _ = x.shape
    out = torch.zeros_like(x)
    for b, s, e in _sequences(T, B, cu_seqlens):
        for c0 in range(s, e, chunk_size):
            c1 = min(c0 + chunk_size, e)
            out[b, c0:c1] = x[b, c0:c1].flip(0).cumsum(0).flip(0)
    return out


def kkt_solve_ref(k: torch.Tensor, beta: torch.Tensor, cu_seqlens: torch.Tensor | None = None,
                  chunk_size: int = CHUNK) -> torch.Tensor:
    """The ungated WY inverse A = (I + strictLower(diag(beta) K K^T))^-1 of every chunk.

    k [B, T, H, K], beta [B, T, HV] -> A [B, T, HV, chunk_size] float64; row t holds row
    (t - chunk start) of its chunk's inverse, zero-padded on the right for a partial chunk.
    """
    B, T, H, K = k.shape
    HV = beta.shape[2]
    ke = _expand_heads(k.double(), HV)
    A = torch.zeros(B, T, HV, chunk_size, dtype=torch.float64, device=k.device)
    for b, s, e in _sequences(T, B, cu_seqlens):
        for c0 in range(s, e, chunk_size):
            c1 = min(c0 + chunk_size, e)
            kc = ke[b, c0:c1].transpose(0, 1)  # [HV, n, K]
            kk = kc @ kc.transpose(1, 2)  # [HV, n, n]
            L = torch.tril(beta[b, c0:c1].double().t()[:, :, None] * kk, diagonal=-1)
            eye = torch.eye(c1 - c0, dtype=torch.float64, device=k.device).expand_as(L)
            inv = torch.linalg.solve_triangular(eye + L, eye, upper=False, unitriangular=True)
            A[b, c0:c1, :, : c1 - c0] = inv.transpose(0, 1)
    return A


def chunk_fwd_ref(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g_cumsum: torch.Tensor,
    beta: torch.Tensor,
    A: torch.Tensor,
    scale: float,
    initial_state: torch.Tensor | None = None,
    cu_seqlens: torch.Tensor | None = None,
    state_v_first: bool = False,
    chunk_states: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The per-chunk forward of the fused kernel, in float64.

    With Gamma_ij = exp(gc_i - gc_j) (i >= j), gamma = exp(gc), r = exp(gc_last - gc):
    Ag = Gamma * A * beta_col; W = V - gamma * (K S); Vd = Ag W;
    O = scale * gamma * (Q S) + (scale * Gamma * Q K^T) Vd; S <- gamma_last S + K^T (r * Vd).
    Returns o [B, T, HV, V] and final states [N, HV, K, V] (or [N, HV, V, K]), float64.
    chunk_states, when given ([ceil(B T / 64) + N, HV, K, V]), receives every chunk's start state ([K, V]
    whatever state_v_first says) at its chunk slot: chunk j of sequence n, whose tokens start at offset c
    of the packed [B * T] tokens, is slot c // 64 + n + j (docs/gdn_chunk_derivation.md, "Chunk slots").
    """
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    qe, ke = _expand_heads(q.double(), HV), _expand_heads(k.double(), HV)
    vd, gd, bd, Ad = v.double(), g_cumsum.double(), beta.double(), A.double()
    o = torch.zeros(B, T, HV, V, dtype=torch.float64, device=q.device)
    finals = []
    for n, (b, s, e) in enumerate(_sequences(T, B, cu_seqlens)):
        if initial_state is None:
            S = torch.zeros(HV, K, V, dtype=torch.float64, device=q.device)
        else:
            S = initial_state[n].double()
            S = S.transpose(-1, -2) if state_v_first else S
        for j, c0 in enumerate(range(s, e, CHUNK)):
            c1 = min(c0 + CHUNK, e)
            if chunk_states is not None:
                chunk_states[(b * T + s) // CHUNK + n + j] = S
            o[b, c0:c1], _, S = _chunk_forward(qe[b, c0:c1], ke[b, c0:c1], vd[b, c0:c1], gd[b, c0:c1],
                                               bd[b, c0:c1], S, scale, Ad[b, c0:c1, :, : c1 - c0])
        finals.append(S.transpose(-1, -2) if state_v_first else S)
    final = torch.stack(finals) if finals else torch.zeros(0, HV, K, V, dtype=torch.float64, device=q.device)
    return o, final


def chunk_bwd_ref(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g_cumsum: torch.Tensor,
    beta: torch.Tensor,
    do: torch.Tensor,
    dht: torch.Tensor | None,
    scale: float,
    initial_state: torch.Tensor | None = None,
    cu_seqlens: torch.Tensor | None = None,
    state_v_first: bool = False,
) -> tuple[torch.Tensor, ...]:
    """The chunked backward in float64, written out the way the kernels compute it
    (docs/gdn_chunk_derivation.md, "Backward"): a forward pass for the chunk start states, then per
    chunk from last to first the local gradients and dS0 = gamma_last dS1 + K^T dVg + scale Q^T (gamma dO).

    Returns (dq, dk, dv, dg, dbeta, dh0): dq, dk summed over each v-head group, dg w.r.t. the raw g
    (reverse chunk-local cumsum of the gradient w.r.t. g_cumsum), dh0 None without an initial state.
    Autograd is not used, so this also runs inside dispatcher kernels.
    """
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    G = HV // H
    qe, ke = _expand_heads(q.double(), HV), _expand_heads(k.double(), HV)
    vd, gd, bd, dod = v.double(), g_cumsum.double(), beta.double(), do.double()
    dq_v = torch.zeros(B, T, HV, K, dtype=torch.float64, device=q.device)
    dk_v = torch.zeros_like(dq_v)
    dv = torch.zeros(B, T, HV, V, dtype=torch.float64, device=q.device)
    dgc_all = torch.zeros(B, T, HV, dtype=torch.float64, device=q.device)
    dbeta = torch.zeros_like(dgc_all)
    dh0s = []
    for n, (b, s, e) in enumerate(_sequences(T, B, cu_seqlens)):
        S = torch.zeros(HV, K, V, dtype=torch.float64, device=q.device)
        if initial_state is not None:
            S = initial_state[n].double()
            S = S.transpose(-1, -2) if state_v_first else S
        chunks, starts = list(range(s, e, CHUNK)), []
        for c0 in chunks:  # forward: the state at each chunk start
            starts.append(S)
            c1 = min(c0 + CHUNK, e)
            _, _, S = _chunk_forward(qe[b, c0:c1], ke[b, c0:c1], vd[b, c0:c1], gd[b, c0:c1], bd[b, c0:c1], S, scale)
        dS = torch.zeros(HV, K, V, dtype=torch.float64, device=q.device)
        if dht is not None and dht.numel() > 0:
            dS = dht[n].double()
            dS = dS.transpose(-1, -2) if state_v_first else dS
        for c0, S0 in zip(reversed(chunks), reversed(starts)):
            c1 = min(c0 + CHUNK, e)
            sl = slice(c0, c1)
            grads = _chunk_backward(qe[b, sl], ke[b, sl], vd[b, sl], gd[b, sl], bd[b, sl], dod[b, sl], S0, dS, scale)
            dq_v[b, sl], dk_v[b, sl], dv[b, sl], dgc_all[b, sl], dbeta[b, sl], dS = grads
        dh0s.append(dS.transpose(-1, -2) if state_v_first else dS)
    dq = dq_v.view(B, T, H, G, K).sum(3)
    dk = dk_v.view(B, T, H, G, K).sum(3)
    dg = chunk_local_reverse_cumsum_ref(dgc_all, cu_seqlens)
    dh0 = None
    if initial_state is not None:
        dh0 = torch.stack(dh0s) if dh0s else torch.zeros(0, HV, K, V, dtype=torch.float64, device=q.device)
    return dq, dk, dv, dg, dbeta, dh0


def _chunk_tensors(Q, Kc, G, b):
    """Per-chunk quantities shared by the forward and backward ([HV, m, ...] after transposes)."""
    m = Q.shape[0]
    Q, Kc, G, b = Q.transpose(0, 1), Kc.transpose(0, 1), G.t(), b.t()
    lower = torch.ones(m, m, dtype=torch.bool, device=Q.device).tril()
    Gam = torch.exp((G[:, :, None] - G[:, None, :]).masked_fill(~lower, float("-inf")))
    KK = Kc @ Kc.transpose(1, 2)
    eye = torch.eye(m, dtype=Q.dtype, device=Q.device).expand_as(KK)
    A = torch.linalg.solve_triangular(eye + torch.tril(b[:, :, None] * KK, -1), eye, upper=False,
                                      unitriangular=True)
    return Q, Kc, G, b, Gam, KK, A


def _chunk_forward(Q, Kc, Vc, G, b, S, scale, A_given=None):
    """One chunk of the forward: returns (o [m, HV, V], Vd [HV, m, V], S_next). `A_given` ([m, HV, m])
    replaces the inverse computed here (to check a kernel's A separately from the rest)."""
    Q, Kc, G, b, Gam, _, A = _chunk_tensors(Q, Kc, G, b)
    if A_given is not None:
        A = A_given.transpose(0, 1)
    Vc = Vc.transpose(0, 1)
    gamma, r = torch.exp(G)[..., None], torch.exp(G[:, -1:] - G)[..., None]
    Ag = Gam * A * b[:, None, :]
    Vd = Ag @ (Vc - gamma * (Kc @ S))
    o = scale * gamma * (Q @ S) + (scale * Gam * (Q @ Kc.transpose(1, 2))) @ Vd
    return o.transpose(0, 1), Vd, torch.exp(G[:, -1])[:, None, None] * S + Kc.transpose(1, 2) @ (r * Vd)


def _chunk_backward(Q, Kc, Vc, G, b, dO, S0, dS1, scale):
    """One chunk of the backward (steps of docs/gdn_chunk_derivation.md, "Backward").

    Returns per-token (dq, dk, dv [m, HV, *], dgc, dbeta [m, HV]) and dS0 [HV, K, V]."""
    Q, Kc, G, b, Gam, KK, A = _chunk_tensors(Q, Kc, G, b)
    Vc, dO = Vc.transpose(0, 1), dO.transpose(0, 1)
    tr = lambda x: x.transpose(-1, -2)  # noqa: E731
    gamma, r = torch.exp(G)[..., None], torch.exp(G[:, -1:] - G)[..., None]
    gL = torch.exp(G[:, -1])[:, None, None]
    Ab = A * b[:, None, :]
    Ag = Gam * Ab
    Pg = scale * Gam * (Q @ tr(Kc))
    U = Kc @ S0
    W = Vc - gamma * U
    Vd = Ag @ W
    dVd = r * (Kc @ dS1) + tr(Pg) @ dO  # 1
    dW = tr(Ag) @ dVd  # 2: dv
    dVg = -gamma * dW  # 3
    dgc = (dVg * U).sum(-1)
    dKa = r * (Vd @ tr(dS1))  # 4
    t = (Kc * dKa).sum(-1)
    dgc = dgc - t
    dgc_last = t.sum(-1) + (gL[:, 0, 0] * (dS1 * S0).sum((-1, -2)))  # 4 and 6
    dK = dKa + dVg @ tr(S0)  # 5
    dS0 = gL * dS1 + tr(Kc) @ dVg + scale * tr(Q) @ (gamma * dO)  # 6
    dQ = scale * gamma * (dO @ tr(S0))  # 7
    dgc = dgc + (Q * dQ).sum(-1)
    dPg = dO @ tr(Vd)  # 8
    dP = scale * Gam * dPg
    dQ = dQ + dP @ Kc
    dK = dK + tr(dP) @ Q
    dAb = Gam * (dVd @ tr(W))  # 9
    E = Pg * dPg + dAb * Ab  # 10
    dgc = dgc + E.sum(-1) - E.sum(-2)
    dbeta = (dAb * A).sum(-2)  # 11
    dA = dAb * b[:, None, :]
    dL = torch.tril(-tr(A) @ dA @ tr(A), -1)  # 12
    dbeta = dbeta + (dL * KK).sum(-1)
    dKK = b[:, :, None] * dL
    dK = dK + (dKK + tr(dKK)) @ Kc
    dgc[:, -1] += dgc_last
    return (dQ.transpose(0, 1), dK.transpose(0, 1), dW.transpose(0, 1), dgc.t(), dbeta.t(), dS0)


def gdn_chunk_ref(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    cu_seqlens: torch.Tensor | None = None,
    state_v_first: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Chunked WY forward in float64 (same arguments and results as `gdn_recurrent_ref`)."""
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    gc = chunk_local_cumsum_ref(g, cu_seqlens)
    A = kkt_solve_ref(k, beta, cu_seqlens)
    o, final = chunk_fwd_ref(q, k, v, gc, beta, A, scale, initial_state, cu_seqlens, state_v_first)
    return o, (final if output_final_state else None)
