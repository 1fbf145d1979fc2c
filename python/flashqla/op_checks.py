"""Argument checks of the CPU implementations of the ops: the same contract and the same messages as the
CUDA op layer (csrc/ops/gdn_common.cpp `check_gdn_inputs`, csrc/ops/gdn_bwd.cpp), raised as RuntimeError,
so that code written against the CPU op path behaves the same on a GPU.

Two differences, both because the CPU path has no kernels: no 16-byte alignment requirement, and
malformed cu_seqlens values raise here (reading them costs nothing on the host) where the CUDA op clamps
them into [0, T] without reading them back (docs/errors.md).
"""

from __future__ import annotations

import torch

from .validate import CHUNK, HEAD_DIM, _shape, index_limits_ok, num_chunk_slots

_NAMES = {torch.bfloat16: "bfloat16", torch.float16: "float16", torch.float32: "float32", torch.float64: "float64",
          torch.int32: "int32", torch.int64: "int64"}


def _check(ok: bool, op: str, msg: str) -> None:
    if not ok:
        raise RuntimeError(f"{op}: {msg}")


def _dtype_name(t: torch.Tensor) -> str:
    return _NAMES.get(t.dtype, "an unsupported dtype")


def _dtype(op: str, name: str, t: torch.Tensor, want: torch.dtype) -> None:
    _check(t.dtype == want, op, f"{name} must be {_NAMES[want]}, got {_dtype_name(t)}")


def _layout(op: str, name: str, t: torch.Tensor, want: list[int], layout: str) -> None:
    _check(list(t.shape) == want, op, f"{name} must have shape {layout}, got {_shape(t)}")


def _contiguous(op: str, name: str, t: torch.Tensor) -> None:
    _check(t.is_contiguous(), op, f"{name} must be contiguous")


def check_gdn_inputs(op, q, k, v, g_name, g, beta, initial_state, cu_seqlens, state_v_first) -> tuple[int, ...]:
    """The op-level checks of q, k, v, g (or g_cumsum), beta, initial_state, cu_seqlens. Returns (T, H, HV, N)."""
    for name, t in (("q", q), ("k", k), ("v", v), (g_name, g), ("beta", beta), ("cu_seqlens", cu_seqlens)):
        _contiguous(op, name, t)
    _check(q.dtype in (torch.bfloat16, torch.float16), op, f"q must be bfloat16 or float16, got {_dtype_name(q)}")
    _dtype(op, "k", k, q.dtype)
    _dtype(op, "v", v, q.dtype)
    _dtype(op, g_name, g, torch.float32)
    _dtype(op, "beta", beta, torch.float32)
    _dtype(op, "cu_seqlens", cu_seqlens, torch.int32)
    _check(q.dim() == 4 and q.shape[0] == 1, op, f"q must have shape [1, T, H, K], got {_shape(q)}")
    T, H = q.shape[1], q.shape[2]
    _check(q.shape[3] == HEAD_DIM, op, f"head size K must be 128, got {q.shape[3]}")
    _layout(op, "k", k, [1, T, H, HEAD_DIM], "[1, T, H, K] (as q)")
    _check(v.dim() == 4 and v.shape[0] == 1 and v.shape[1] == T, op,
           f"v must have shape [1, T, HV, V], got {_shape(v)}")
    HV = v.shape[2]
    _check(v.shape[3] == HEAD_DIM, op, f"head size V must be 128, got {v.shape[3]}")
    _check(H > 0 and HV > 0 and HV % H == 0, op,
           f"the number of v heads ({HV}) must be a positive multiple of the number of q/k heads ({H})")
    _layout(op, g_name, g, [1, T, HV], "[1, T, HV]")
    _layout(op, "beta", beta, [1, T, HV], "[1, T, HV]")
    _check(cu_seqlens.dim() == 1 and cu_seqlens.shape[0] >= 1, op,
           f"cu_seqlens must have shape [N + 1], got {_shape(cu_seqlens)}")
    N = cu_seqlens.shape[0] - 1
    if initial_state is not None:
        _contiguous(op, "initial_state", initial_state)
        _dtype(op, "initial_state", initial_state, torch.float32)
        _layout(op, "initial_state", initial_state, [N, HV, HEAD_DIM, HEAD_DIM],
                "[N, HV, V, K]" if state_v_first else "[N, HV, K, V]")
    _check(index_limits_ok(T, N, HV), op, "too many tokens, sequences or heads for the kernels' 32-bit token "
           f"positions and block indices (T = {T}, N = {N}, HV = {HV})")
    values = cu_seqlens.long()
    _check(values[0].item() == 0 and bool((values[1:] >= values[:-1]).all()) and values[-1].item() <= T, op,
           f"cu_seqlens must start at 0, never decrease and end at most at T = {T}, got {values.tolist()[:16]}")
    return T, H, HV, N


def check_bwd_extras(op, A, do, dht, T, HV, N, dtype, state_v_first, chunk_states=None) -> None:
    """The backward's A, do, dht and chunk_states (csrc/ops/gdn_bwd.cpp)."""
    _contiguous(op, "A", A)
    _dtype(op, "A", A, dtype)
    _layout(op, "A", A, [1, T, HV, CHUNK], "[1, T, HV, 64]")
    _contiguous(op, "do", do)
    _dtype(op, "do", do, dtype)
    _layout(op, "do", do, [1, T, HV, HEAD_DIM], "[1, T, HV, V] (as v)")
    if dht is not None:
        _contiguous(op, "dht", dht)
        _dtype(op, "dht", dht, torch.float32)
        _layout(op, "dht", dht, [N, HV, HEAD_DIM, HEAD_DIM], "[N, HV, V, K]" if state_v_first else "[N, HV, K, V]")
    if chunk_states is not None:
        _contiguous(op, "chunk_states", chunk_states)
        _dtype(op, "chunk_states", chunk_states, dtype)
        _layout(op, "chunk_states", chunk_states, [num_chunk_slots(T, N), HV, HEAD_DIM, HEAD_DIM],
                "[ceil(T / 64) + N, HV, K, V] (gdn_fwd's output_chunk_states)")


def check_max_seqlen(op: str, max_seqlen, T: int) -> None:
    """max_seqlen: 0 (unknown) or the longest sequence's length in [1, T] (a planning hint of the CUDA ops)."""
    _check(isinstance(max_seqlen, int) and not isinstance(max_seqlen, bool) and 0 <= max_seqlen <= T, op,
           f"max_seqlen must be 0 (unknown) or the longest sequence's length in [1, T = {T}], got {max_seqlen}")
