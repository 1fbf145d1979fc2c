"""Argument checks of the public API. Every error names the argument at fault.

`check_inputs` runs on the user's tensors before anything is computed; `check_cu_seqlens_values`
reads the offsets (from `cu_seqlens_cpu` when given, else with one device-to-host copy, skipped
while a CUDA graph is being captured or torch.compile is tracing).
"""

from __future__ import annotations

import torch

HEAD_DIM = 128
QKV_DTYPES = (torch.bfloat16, torch.float16)
FLOAT_DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.float64)
INT32_MAX = 2**31 - 1


def _fail(name: str, msg: str, exc: type[Exception] = ValueError):
    raise exc(f"flashqla.chunk_gated_delta_rule: `{name}` {msg}")


def _shape(t: torch.Tensor) -> str:
    return str(list(t.shape))


def check_inputs(q, k, v, g, beta, scale, initial_state, cu_seqlens, state_v_first) -> tuple[int, int, int]:
    """Validates types, dtypes, devices, ranks and sizes. Returns (B, T, N)."""
    for name, t in (("q", q), ("k", k), ("v", v), ("g", g), ("beta", beta)):
        if not isinstance(t, torch.Tensor):
            _fail(name, f"must be a torch.Tensor, got {type(t).__name__}", TypeError)
    if q.dim() != 4:
        _fail("q", f"must have 4 dims [B, T, H, K], got shape {_shape(q)}")
    if k.dim() != 4:
        _fail("k", f"must have 4 dims [B, T, H, K], got shape {_shape(k)}")
    if v.dim() != 4:
        _fail("v", f"must have 4 dims [B, T, HV, V], got shape {_shape(v)}")
    B, T, H, K = q.shape
    if q.dtype not in QKV_DTYPES:
        _fail("q", f"must be bfloat16 or float16, got {q.dtype}", TypeError)
    for name, t in (("k", k), ("v", v)):
        if t.dtype != q.dtype:
            _fail(name, f"must have q's dtype {q.dtype}, got {t.dtype}", TypeError)
    for name, t in (("g", g), ("beta", beta)):
        if t.dtype not in FLOAT_DTYPES:
            _fail(name, f"must be a floating-point tensor, got {t.dtype}", TypeError)
    dev = q.device
    for name, t in (("k", k), ("v", v), ("g", g), ("beta", beta), ("initial_state", initial_state),
                    ("cu_seqlens", cu_seqlens)):
        if isinstance(t, torch.Tensor) and t.device != dev:
            _fail(name, f"is on {t.device} but q is on {dev}; all tensors must be on one device")
    if K != HEAD_DIM:
        _fail("q", f"head size K must be 128 (the only size the kernels support), got {K}", NotImplementedError)
    if tuple(k.shape) != tuple(q.shape):
        _fail("k", f"must have q's shape {_shape(q)}, got {_shape(k)}")
    if v.shape[0] != B or v.shape[1] != T:
        _fail("v", f"must have shape [B, T, HV, V] with q's B = {B} and T = {T}, got {_shape(v)}")
    HV, V = v.shape[2], v.shape[3]
    if V != HEAD_DIM:
        _fail("v", f"head size V must be 128 (the only size the kernels support), got {V}", NotImplementedError)
    if H == 0 or HV % H != 0:
        _fail("v", f"has {HV} heads, which must be a positive multiple of q/k's {H} heads")
    for name, t in (("g", g), ("beta", beta)):
        if tuple(t.shape) != (B, T, HV):
            _fail(name, f"must have shape [B, T, HV] = {[B, T, HV]}, got {_shape(t)}")
    if scale is not None and not isinstance(scale, (int, float)):
        _fail("scale", f"must be a float or None, got {type(scale).__name__}", TypeError)
    if cu_seqlens is not None:
        if not isinstance(cu_seqlens, torch.Tensor):
            _fail("cu_seqlens", f"must be a torch.Tensor, got {type(cu_seqlens).__name__}", TypeError)
        if cu_seqlens.dtype not in (torch.int32, torch.int64):
            _fail("cu_seqlens", f"must be int32 or int64, got {cu_seqlens.dtype}", TypeError)
        if cu_seqlens.dim() != 1 or cu_seqlens.numel() < 1:
            _fail("cu_seqlens", f"must have shape [N + 1], got {_shape(cu_seqlens)}")
        if B != 1:
            _fail("cu_seqlens", f"requires batch size 1 (packed sequences), got B = {B}; flatten "
                  "variable-length inputs to [1, total_T, ...]")
        N = cu_seqlens.numel() - 1
    else:
        N = B
    if B * T + N + 64 > INT32_MAX:
        _fail("q", f"has {B * T} tokens, more than the 32-bit token index supports")
    if initial_state is not None:
        if not isinstance(initial_state, torch.Tensor):
            _fail("initial_state", f"must be a torch.Tensor, got {type(initial_state).__name__}", TypeError)
        if initial_state.dtype not in FLOAT_DTYPES:
            _fail("initial_state", f"must be a floating-point tensor, got {initial_state.dtype}", TypeError)
        want = [N, HV, V, K] if state_v_first else [N, HV, K, V]
        if list(initial_state.shape) != want:
            layout = "[N, HV, V, K]" if state_v_first else "[N, HV, K, V]"
            _fail("initial_state", f"must have shape {layout} = {want} (N = number of sequences), "
                  f"got {_shape(initial_state)}")
    return B, T, N


def _host_values_readable(t: torch.Tensor) -> bool:
    if torch.compiler.is_compiling():
        return False
    return not (t.is_cuda and torch.cuda.is_current_stream_capturing())


def check_cu_seqlens_values(cu_seqlens: torch.Tensor, cu_seqlens_cpu: torch.Tensor | None, T: int) -> None:
    """cu_seqlens must start at 0, never decrease and end at most at T."""
    if cu_seqlens_cpu is not None:
        if not isinstance(cu_seqlens_cpu, torch.Tensor) or cu_seqlens_cpu.device.type != "cpu":
            _fail("cu_seqlens_cpu", "must be a CPU tensor (a host copy of cu_seqlens)", TypeError)
        if cu_seqlens_cpu.shape != cu_seqlens.shape:
            _fail("cu_seqlens_cpu", f"must have cu_seqlens' shape {_shape(cu_seqlens)}, got "
                  f"{_shape(cu_seqlens_cpu)}")
        values = cu_seqlens_cpu
    elif _host_values_readable(cu_seqlens):
        values = cu_seqlens.cpu()
    else:
        return
    values = values.long()
    if values[0].item() != 0:
        _fail("cu_seqlens", f"must start at 0, got {values[0].item()}")
    if values.numel() > 1 and bool((values[1:] < values[:-1]).any()):
        _fail("cu_seqlens", f"must be non-decreasing, got {values.tolist()[:16]}")
    if values[-1].item() > T:
        _fail("cu_seqlens", f"ends at {values[-1].item()}, beyond the {T} tokens of q")


def check_cp_segment_chunks(cp_segment_chunks) -> None:
    """-1 (automatic), 0 (off) or a positive number of 64-token chunks per segment."""
    if isinstance(cp_segment_chunks, bool) or not isinstance(cp_segment_chunks, int):
        _fail("cp_segment_chunks", f"must be an int, got {type(cp_segment_chunks).__name__}", TypeError)
    if not -1 <= cp_segment_chunks <= 1 << 24:
        _fail("cp_segment_chunks", f"must be -1 (automatic), 0 (off) or a chunk count in [1, 2^24], "
                                   f"got {cp_segment_chunks}")
