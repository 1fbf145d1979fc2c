"""Public API: FLA-compatible `chunk_gated_delta_rule` and the low-level forward.

Both flatten dense batches into the packed form the op takes ([1, B*T, ...] plus cu_seqlens),
convert g, beta and the initial state to float32 and call torch.ops.flashqla.gdn_fwd, which runs
the compiled GPU kernels for CUDA tensors and the float64 reference for CPU tensors.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import torch

from . import _ops  # noqa: F401  (loads the op library, registers fake and CPU implementations)
from .reference import l2norm
from .validate import check_bwd_inputs, check_cp_segment_chunks, check_cu_seqlens_values, check_inputs

__all__ = ["chunk_gated_delta_rule", "chunk_gated_delta_rule_fwd", "chunk_gated_delta_rule_bwd", "GdnForward",
           "GdnGrads"]


class GdnForward(NamedTuple):
    """What the forward computes, including what the backward consumes."""

    o: torch.Tensor  # [B, T, HV, V], v's dtype; zero on padding tokens
    final_state: torch.Tensor | None  # [N, HV, K, V] ([N, HV, V, K] if state_v_first), float32
    g_cumsum: torch.Tensor  # [B, T, HV] float32: chunk-local cumsum of g (64-token chunks)
    A: torch.Tensor  # [B, T, HV, 64] q's dtype: ungated inverse (I + strictLower(diag(beta) K K^T))^-1
    # [ceil(B T / 64) + N, HV, K, V] q's dtype: every chunk's start state by chunk slot (output_chunk_states)
    chunk_states: torch.Tensor | None = None


class GdnGrads(NamedTuple):
    """Gradients returned by `chunk_gated_delta_rule_bwd` (dq, dk summed over each v-head group)."""

    dq: torch.Tensor  # [B, T, H, K], q's dtype
    dk: torch.Tensor  # [B, T, H, K], k's dtype
    dv: torch.Tensor  # [B, T, HV, V], v's dtype
    dg: torch.Tensor  # [B, T, HV] float32, w.r.t. the raw g
    dbeta: torch.Tensor  # [B, T, HV] float32
    dh0: torch.Tensor | None  # like initial_state (float32), None without one


class _Packed(NamedTuple):
    """The op's view of a call: tensors flattened to [1, B*T, ...], contiguous, g/beta/h0 in fp32."""

    B: int
    T: int
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    g: torch.Tensor  # g, or g_cumsum for the backward
    beta: torch.Tensor
    scale: float
    h0: torch.Tensor | None
    cu: torch.Tensor  # int32 offsets of the sequences
    max_seqlen: int  # the longest sequence's tokens where the host knows it (dense batch, cu_seqlens_cpu), else 0


def _max_seqlen(cu_seqlens_cpu: torch.Tensor | None, dense_T: int | None) -> int:
    """The ops' planning hint (segment lengths and V width, csrc/ops/segment_plan.cpp), from what the host already
    holds: T of a dense batch, or the longest sequence of cu_seqlens_cpu (not read while compiling); 0 = unknown."""
    if dense_T is not None:
        return dense_T
    if cu_seqlens_cpu is None or cu_seqlens_cpu.numel() < 2 or torch.compiler.is_compiling():
        return 0
    return int((cu_seqlens_cpu[1:] - cu_seqlens_cpu[:-1]).max())


def _pack(q, k, v, g, beta, scale, initial_state, cu_seqlens, cu_seqlens_cpu, state_v_first,
          g_name: str = "g") -> _Packed:
    """Checks the arguments, then packs dense batches as B sequences of T tokens."""
    B, T, N = check_inputs(q, k, v, g, beta, scale, initial_state, cu_seqlens, state_v_first, g_name)
    check_cu_seqlens_values(cu_seqlens, cu_seqlens_cpu, T)
    if cu_seqlens is not None:
        cu = cu_seqlens.to(torch.int32)
    else:
        cu = torch.arange(B + 1, dtype=torch.int32, device=q.device) * T
    H, K = q.shape[2], q.shape[3]
    HV, V = v.shape[2], v.shape[3]
    return _Packed(
        B, T,
        q.reshape(1, B * T, H, K).contiguous(),
        k.reshape(1, B * T, H, K).contiguous(),
        v.reshape(1, B * T, HV, V).contiguous(),
        g.reshape(1, B * T, HV).to(torch.float32).contiguous(),
        beta.reshape(1, B * T, HV).to(torch.float32).contiguous(),
        K ** -0.5 if scale is None else float(scale),
        None if initial_state is None else initial_state.to(torch.float32).contiguous(),
        cu,
        _max_seqlen(cu_seqlens_cpu, None if cu_seqlens is not None else (T if B > 0 else 0)))


def chunk_gated_delta_rule_fwd(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = True,
    cu_seqlens: torch.Tensor | None = None,
    cu_seqlens_cpu: torch.Tensor | None = None,
    state_v_first: bool = False,
    cp_segment_chunks: int = -1,
    output_chunk_states: bool = False,
) -> GdnForward:
    """Chunked GDN forward without autograd; returns `GdnForward(o, final_state, g_cumsum, A,
    chunk_states)`.

    Arguments as in `chunk_gated_delta_rule` (q and k are used as given: no l2norm here), and
    `cp_segment_chunks`: -1 lets the library decide on intra-card context parallelism, 0 turns it
    off, a positive number forces segments of that many 64-token chunks. `output_chunk_states`: also
    return every chunk's start state (`chunk_states`, else None), which `chunk_gated_delta_rule_bwd`
    then need not recompute (docs/ops.md).
    """
    check_cp_segment_chunks(cp_segment_chunks)
    p = _pack(q, k, v, g, beta, scale, initial_state, cu_seqlens, cu_seqlens_cpu, state_v_first)
    o, final_state, g_cumsum, A, chunk_states = torch.ops.flashqla.gdn_fwd(
        p.q, p.k, p.v, p.g, p.beta, p.scale, p.h0, p.cu, output_final_state, state_v_first, cp_segment_chunks,
        bool(output_chunk_states), p.max_seqlen)
    B, T, HV, V = p.B, p.T, v.shape[2], v.shape[3]
    return GdnForward(
        o.view(B, T, HV, V),
        final_state if output_final_state else None,
        g_cumsum.view(B, T, HV),
        A.view(B, T, HV, A.shape[-1]),
        chunk_states if output_chunk_states else None)


def chunk_gated_delta_rule_bwd(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g_cumsum: torch.Tensor,
    beta: torch.Tensor,
    A: torch.Tensor,
    do: torch.Tensor,
    dht: torch.Tensor | None = None,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    cu_seqlens: torch.Tensor | None = None,
    cu_seqlens_cpu: torch.Tensor | None = None,
    state_v_first: bool = False,
    cp_segment_chunks: int = -1,
    chunk_states: torch.Tensor | None = None,
) -> GdnGrads:
    """Chunked GDN backward without autograd: gradients of the loss given do = dL/do ([B, T, HV, V])
    and dht = dL/dfinal_state (or None), from the forward's inputs and its `g_cumsum` and `A`.

    q and k are the tensors the forward's kernels saw (after any l2norm). `cp_segment_chunks` as in
    `chunk_gated_delta_rule_fwd` (it applies to the recomputation of the chunk states and to the state
    gradient's reverse recurrence). `chunk_states`: the forward's (`output_chunk_states=True`), read
    instead of recomputing them.
    """
    check_cp_segment_chunks(cp_segment_chunks)
    p = _pack(q, k, v, g_cumsum, beta, scale, initial_state, cu_seqlens, cu_seqlens_cpu, state_v_first, "g_cumsum")
    B, T, H, K, HV, V = p.B, p.T, q.shape[2], q.shape[3], v.shape[2], v.shape[3]
    N = p.cu.numel() - 1
    check_bwd_inputs(A, do, dht, B, T, N, HV, q.dtype, q.device, state_v_first, chunk_states)
    dq, dk, dv, dg, dbeta, dh0 = torch.ops.flashqla.gdn_bwd(
        p.q, p.k, p.v, p.g, p.beta, A.reshape(1, B * T, HV, A.shape[-1]).contiguous(),
        do.reshape(1, B * T, HV, V).to(v.dtype).contiguous(),
        None if dht is None else dht.to(torch.float32).contiguous(), p.scale, p.h0, p.cu, state_v_first,
        cp_segment_chunks, None if chunk_states is None else chunk_states.contiguous(), p.max_seqlen)
    return GdnGrads(dq.view(B, T, H, K), dk.view(B, T, H, K), dv.view(B, T, HV, V), dg.view(B, T, HV),
                    dbeta.view(B, T, HV), dh0 if initial_state is not None else None)


_FLA_UNSUPPORTED = {
    "use_gate_in_kernel": "computing the gate inside the kernel",
    "A_log": "computing the gate inside the kernel (A_log)",
    "dt_bias": "computing the gate inside the kernel (dt_bias)",
}


def chunk_gated_delta_rule(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    use_qk_l2norm_in_kernel: bool = False,
    use_beta_sigmoid_in_kernel: bool = False,
    allow_neg_eigval: bool = False,
    state_v_first: bool = False,
    cu_seqlens: torch.Tensor | None = None,
    cu_seqlens_cpu: torch.Tensor | None = None,
    chunk_indices: torch.Tensor | None = None,
    cp_context=None,
    auto_cp: bool = True,
    save_chunk_states: bool = False,
    **kwargs,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Gated DeltaNet, chunked prefill: a drop-in for FLA 0.6.0's `chunk_gated_delta_rule`.

    Per sequence and v-head, with the state S in [K, V]:
    S <- exp(g_t) S;  S <- S + beta_t k_t (v_t - S^T k_t)^T;  o_t = scale * S^T q_t.

    Args:
        q (torch.Tensor):
            queries of shape `[B, T, H, K]`, bfloat16 or float16. K must be 128.
        k (torch.Tensor):
            keys of shape `[B, T, H, K]`, q's dtype.
        v (torch.Tensor):
            values of shape `[B, T, HV, V]`, q's dtype; HV a multiple of H (v-head h reads q/k
            head h // (HV // H)); V must be 128.
        g (torch.Tensor):
            per-token log decay (natural log, <= 0) of shape `[B, T, HV]`; computed in float32.
        beta (torch.Tensor):
            write strengths (already sigmoid-ed) of shape `[B, T, HV]`; computed in float32.
        scale (float | None):
            output scale. Default: `K ** -0.5`.
        initial_state (torch.Tensor | None):
            `[N, HV, K, V]` (`[N, HV, V, K]` if `state_v_first`), any float dtype, read as float32.
            N = B, or the number of sequences with `cu_seqlens`. Default: zeros.
        output_final_state (bool):
            also return the state after each sequence's last token (float32). Default: `False`.
        use_qk_l2norm_in_kernel (bool):
            l2-normalize q and k first (x / sqrt(sum x^2 + 1e-6), statistics in float32).
        state_v_first (bool):
            states in `[V, K]` layout (the layout of vLLM, SGLang and FlashInfer).
        cu_seqlens (torch.Tensor | None):
            `[N + 1]` int32 or int64 offsets of N packed sequences (requires B = 1). Tokens after
            `cu_seqlens[-1]` are padding; their outputs are 0.
        cu_seqlens_cpu (torch.Tensor | None):
            host copy of `cu_seqlens`: its values are then checked without a device-to-host copy,
            and its longest sequence steers the choice of segments and V width (faster where the
            lengths differ widely, e.g. 28672 + 4096 tokens; results do not depend on it). (The
            offsets are not read back at all while a CUDA graph is captured or torch.compile
            traces; the kernels then clamp malformed offsets into [0, T]. docs/errors.md.)
        chunk_indices (torch.Tensor | None):
            accepted for FLA compatibility and not needed: flashqla maps chunks to sequences on the
            device.
        auto_cp (bool):
            allow intra-card context parallelism: long sequences are split into segments that run
            in parallel, their start states from a warm-up pass (exact fallback for heads without
            decay). Chosen per call from T, N and the head count. Results agree within rounding
            (docs/gdn_chunk_derivation.md, "Context parallelism"). Default: `True`.
        save_chunk_states (bool):
            keep every 64-token chunk's start state from the forward for the backward, which
            otherwise recomputes them (a forward pass of its own: 7-17% of a training step's
            kernels on an H200, benchmarks/results/H200_chunk_states.md; gradients bitwise the
            same). Costs memory until the backward: 32 KB per chunk and v-head in bf16/fp16
            (512 MB for 32768 tokens and 32 v-heads). Only when a gradient is needed. Default:
            `False` (as FLA, which recomputes).

    Differentiable in q, k, v, g, beta and initial_state (also through the l2norm), with gradients
    flowing from o and from the final state; the backward runs the GPU kernels (or the float64
    reference on CPU) through `torch.ops.flashqla.gdn_bwd`. Without a gradient to compute
    (`torch.no_grad()`, or no input requiring one) the call runs `torch.ops.flashqla.gdn_prefill`,
    which keeps nothing for a backward (docs/ops.md).

    Bad arguments raise TypeError, ValueError or NotImplementedError naming the argument before
    anything runs (docs/errors.md); NaN/Inf in one sequence's inputs stay in that sequence.

    Unsupported FLA options (`use_beta_sigmoid_in_kernel`, `allow_neg_eigval`, `cp_context`,
    `use_gate_in_kernel`/`A_log`/`dt_bias`, `chunk_size` other than 64) raise NotImplementedError.
    Inputs need not be contiguous (they are copied when they are not). CUDA tensors need a GPU
    the library was built for (`python -m flashqla --info`); CPU tensors run the float64 reference and
    return the same dtypes.

    Returns:
        o of shape `[B, T, HV, V]` in v's dtype, and the final state (float32) or None.
    """
    head_first = kwargs.pop("head_first", False)
    if head_first:
        raise ValueError("flashqla.chunk_gated_delta_rule: `head_first` was removed in FLA; inputs must be "
                         "[B, T, H, ...]")
    if "transpose_state_layout" in kwargs:
        warnings.warn("`transpose_state_layout` is deprecated; use `state_v_first`", DeprecationWarning,
                      stacklevel=2)
        if state_v_first:
            raise ValueError("flashqla.chunk_gated_delta_rule: pass `state_v_first` or the deprecated "
                             "`transpose_state_layout`, not both")
        state_v_first = bool(kwargs.pop("transpose_state_layout"))
    chunk_size = kwargs.pop("chunk_size", 64)
    if chunk_size != 64:
        raise NotImplementedError(f"flashqla.chunk_gated_delta_rule: `chunk_size` must be 64, got {chunk_size}")
    for name, what in _FLA_UNSUPPORTED.items():
        value = kwargs.pop(name, None)
        if value is not None and value is not False:
            raise NotImplementedError(f"flashqla.chunk_gated_delta_rule: `{name}` ({what}) is not supported; "
                                      "compute the gate outside")
    if kwargs:
        raise TypeError(f"flashqla.chunk_gated_delta_rule: unexpected keyword arguments {sorted(kwargs)}")
    if use_beta_sigmoid_in_kernel:
        raise NotImplementedError("flashqla.chunk_gated_delta_rule: `use_beta_sigmoid_in_kernel` is not supported; "
                                  "pass beta after the sigmoid")
    if allow_neg_eigval:
        raise NotImplementedError("flashqla.chunk_gated_delta_rule: `allow_neg_eigval` is not supported")
    if cp_context is not None:
        raise NotImplementedError("flashqla.chunk_gated_delta_rule: `cp_context` (context parallelism across "
                                  "GPUs) is not supported")
    del chunk_indices  # see the docstring
    if use_qk_l2norm_in_kernel:
        check_inputs(q, k, v, g, beta, scale, initial_state, cu_seqlens, state_v_first)
        q, k = l2norm(q), l2norm(k)
    needs_grad = torch.is_grad_enabled() and any(
        isinstance(t, torch.Tensor) and t.requires_grad for t in (q, k, v, g, beta, initial_state))
    if not needs_grad:
        # inference: the op without the intermediates a backward reads (it may skip the chunk prep, docs/ops.md)
        p = _pack(q, k, v, g, beta, scale, initial_state, cu_seqlens, cu_seqlens_cpu, state_v_first)
        o, final_state = torch.ops.flashqla.gdn_prefill(p.q, p.k, p.v, p.g, p.beta, p.scale, p.h0, p.cu,
                                                        output_final_state, state_v_first, -1 if auto_cp else 0,
                                                        p.max_seqlen)
        return o.view(p.B, p.T, v.shape[2], v.shape[3]), (final_state if output_final_state else None)
    out = chunk_gated_delta_rule_fwd(q, k, v, g, beta, scale, initial_state, output_final_state, cu_seqlens,
                                     cu_seqlens_cpu, state_v_first, cp_segment_chunks=-1 if auto_cp else 0,
                                     output_chunk_states=bool(save_chunk_states))
    return out.o, out.final_state
