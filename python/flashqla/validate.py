"""Argument checks of the public API. Every error names the argument at fault (docs/errors.md lists them).

`check_inputs` runs on the user's tensors before anything is computed (shapes, dtypes, devices and the
GPU only: no device-to-host copy). `check_cu_seqlens_values` reads the offsets: from `cu_seqlens_cpu`
when given, else with one device-to-host copy, which is skipped while a CUDA graph is being captured or
torch.compile is tracing (the kernels then clamp malformed offsets instead). `check_bwd_inputs` covers
the extra tensors of the low-level backward.
"""

from __future__ import annotations

import functools
import math

import torch

HEAD_DIM = 128
CHUNK = 64
QKV_DTYPES = (torch.bfloat16, torch.float16)
FLOAT_DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.float64)
OFFSET_DTYPES = (torch.int32, torch.int64)
# the CUDA kernels run one CTA row per sequence (and one for the padding tail) on a grid dimension of at
# most 65535 (csrc/ops/segment_plan.h, kMaxGridRows)
MAX_CUDA_SEQS = 65534
INT32_MAX = 2**31 - 1


def _fail(name: str, msg: str, exc: type[Exception] = ValueError):
    raise exc(f"flashqla.chunk_gated_delta_rule: `{name}` {msg}")


def _shape(t: torch.Tensor) -> str:
    return str(list(t.shape))


def check_inputs(q, k, v, g, beta, scale, initial_state, cu_seqlens, state_v_first,
                 g_name: str = "g") -> tuple[int, int, int]:
    """Validates types, dtypes, devices, ranks, sizes and the GPU. Returns (B, T, N)."""
    for name, t in (("q", q), ("k", k), ("v", v), (g_name, g), ("beta", beta)):
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
    for name, t in ((g_name, g), ("beta", beta)):
        if t.dtype not in FLOAT_DTYPES:
            _fail(name, f"must be a floating-point tensor, got {t.dtype}", TypeError)
    dev = q.device
    for name, t in (("k", k), ("v", v), (g_name, g), ("beta", beta), ("initial_state", initial_state),
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
    if H == 0 or HV == 0 or HV % H != 0:
        _fail("v", f"has {HV} heads, which must be a positive multiple of q/k's {H} heads")
    for name, t in ((g_name, g), ("beta", beta)):
        if tuple(t.shape) != (B, T, HV):
            _fail(name, f"must have shape [B, T, HV] = {[B, T, HV]}, got {_shape(t)}")
    if scale is not None:
        if isinstance(scale, bool) or not isinstance(scale, (int, float)):
            _fail("scale", f"must be a float or None, got {type(scale).__name__}", TypeError)
        if not math.isfinite(scale):
            _fail("scale", f"must be finite, got {scale}")
    if cu_seqlens is not None:
        if not isinstance(cu_seqlens, torch.Tensor):
            _fail("cu_seqlens", f"must be a torch.Tensor, got {type(cu_seqlens).__name__}", TypeError)
        if cu_seqlens.dtype not in OFFSET_DTYPES:
            _fail("cu_seqlens", f"must be int32 or int64, got {cu_seqlens.dtype}", TypeError)
        if cu_seqlens.dim() != 1 or cu_seqlens.numel() < 1:
            _fail("cu_seqlens", f"must have shape [N + 1], got {_shape(cu_seqlens)}")
        if B != 1:
            _fail("cu_seqlens", f"requires batch size 1 (packed sequences), got B = {B}; flatten "
                  "variable-length inputs to [1, total_T, ...]")
        N = cu_seqlens.numel() - 1
    else:
        N = B
    if q.device.type == "cuda" and N > MAX_CUDA_SEQS:
        _fail("cu_seqlens" if cu_seqlens is not None else "q",
              f"holds {N} sequences; the CUDA kernels take at most {MAX_CUDA_SEQS} per call (split the batch)")
    check_index_limits(B * T, N, HV)
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
    check_device_supported(q)
    return B, T, N


def num_chunk_slots(T, N):
    """ceil(T / 64) + N: the chunk slots of T packed tokens in N sequences (docs/gdn_chunk_derivation.md)."""
    return (T + CHUNK - 1) // CHUNK + N


def index_limits_ok(T: int, N: int, HV: int) -> bool:
    """The kernels keep token positions and CTA indices in 32-bit integers (global offsets are 64-bit):
    2T + 64(N + 1) (a chunk slot's first token, with its intermediate terms), 4 (ceil(T/64) + N) * HV (the
    chunk-parallel grids; the fused forward's warm-up grid has up to 4 CTAs per segment slot and head)
    and 2 N HV (the sequential grids) must stay below 2^31."""
    slots = num_chunk_slots(T, N)
    return 2 * T + CHUNK * (N + 1) <= INT32_MAX and 4 * slots * HV <= INT32_MAX and 2 * N * HV <= INT32_MAX


def check_index_limits(T: int, N: int, HV: int) -> None:
    if not index_limits_ok(T, N, HV):
        _fail("q", f"has {T} tokens in {N} sequences with {HV} v-heads: beyond the kernels' 32-bit token "
              "positions and block indices (needs 2T + 64(N+1), 4 (ceil(T/64) + N) * HV and 2 N HV below 2^31)")


@functools.lru_cache(maxsize=1)
def _compiled_majors() -> tuple[frozenset, str]:
    """Compute-capability majors the installed library has kernels for, and their arch names."""
    from ._ops import build_manifest

    archs = build_manifest().get("archs", [])
    majors = frozenset(int(a.removeprefix("sm_").rstrip("abf")) // 10 for a in archs)
    return majors, ", ".join(archs)


def check_device_supported(q: torch.Tensor) -> None:
    """CUDA tensors need a GPU the library has kernels for (the op would fail at the first launch)."""
    if not q.is_cuda or torch.compiler.is_compiling():
        return
    majors, names = _compiled_majors()
    if not majors:  # no manifest (not an installed build): the op layer reports it
        return
    cc = torch.cuda.get_device_capability(q.device)
    if cc[0] not in majors:
        _fail("q", f"is on {q.device}, a GPU of compute capability {cc[0]}.{cc[1]}; this flashqla build has "
              f"kernels for {names} only (sm_90a: H100/H200, sm_100a: B200/GB200, sm_120a: RTX 50xx). Use CPU "
              "tensors for the float64 reference path",
              NotImplementedError)


def _host_values_readable(t: torch.Tensor) -> bool:
    return not (t.is_cuda and torch.cuda.is_current_stream_capturing())


def check_cu_seqlens_values(cu_seqlens: torch.Tensor | None, cu_seqlens_cpu: torch.Tensor | None, T: int) -> None:
    """cu_seqlens must start at 0, never decrease and end at most at T (tokens after its end are padding)."""
    if cu_seqlens is None:
        if cu_seqlens_cpu is not None:
            _fail("cu_seqlens_cpu", "was given without `cu_seqlens` (pass both, or neither)")
        return
    if torch.compiler.is_compiling():  # reading values would break the graph; the kernels clamp
        return
    if cu_seqlens_cpu is not None:
        if not isinstance(cu_seqlens_cpu, torch.Tensor) or cu_seqlens_cpu.device.type != "cpu":
            _fail("cu_seqlens_cpu", "must be a CPU tensor (a host copy of cu_seqlens)", TypeError)
        if cu_seqlens_cpu.dtype not in OFFSET_DTYPES:
            _fail("cu_seqlens_cpu", f"must be int32 or int64, got {cu_seqlens_cpu.dtype}", TypeError)
        if cu_seqlens_cpu.shape != cu_seqlens.shape:
            _fail("cu_seqlens_cpu", f"must have cu_seqlens' shape {_shape(cu_seqlens)}, got "
                  f"{_shape(cu_seqlens_cpu)}")
        values, name = cu_seqlens_cpu, "cu_seqlens_cpu"
    elif _host_values_readable(cu_seqlens):
        values, name = cu_seqlens.cpu(), "cu_seqlens"
    else:
        return
    values = values.long()
    if values[0].item() != 0:
        _fail(name, f"must start at 0, got {values[0].item()}")
    negative = (values < 0).nonzero()
    if negative.numel():
        i = negative[0, 0].item()
        _fail(name, f"must not be negative, got {values[i].item()} at index {i}")
    if values.numel() > 1 and bool((values[1:] < values[:-1]).any()):
        i = (values[1:] < values[:-1]).nonzero()[0, 0].item()
        _fail(name, f"must be non-decreasing, got {values[i].item()} then {values[i + 1].item()} at index {i + 1}")
    if values[-1].item() > T:
        _fail(name, f"ends at {values[-1].item()}, beyond the {T} tokens of q")


def check_cp_segment_chunks(cp_segment_chunks) -> None:
    """-1 (automatic), 0 (off) or a positive number of 64-token chunks per segment."""
    if isinstance(cp_segment_chunks, bool) or not isinstance(cp_segment_chunks, int):
        _fail("cp_segment_chunks", f"must be an int, got {type(cp_segment_chunks).__name__}", TypeError)
    if not -1 <= cp_segment_chunks <= 1 << 24:
        _fail("cp_segment_chunks", f"must be -1 (automatic), 0 (off) or a chunk count in [1, 2^24], "
                                   f"got {cp_segment_chunks}")


def check_bwd_inputs(A, do, dht, B: int, T: int, N: int, HV: int, dtype: torch.dtype, device,
                     state_v_first: bool, chunk_states=None) -> None:
    """The forward's A, the output gradient do, the final-state gradient dht and the forward's chunk
    states (or None) of the low-level backward."""
    for name, t in (("A", A), ("do", do)):
        if not isinstance(t, torch.Tensor):
            _fail(name, f"must be a torch.Tensor, got {type(t).__name__}", TypeError)
    if A.dtype != dtype:
        _fail("A", f"must have q's dtype {dtype} (the forward's output), got {A.dtype}", TypeError)
    if tuple(A.shape) != (B, T, HV, CHUNK):
        _fail("A", f"must have shape [B, T, HV, 64] = {[B, T, HV, CHUNK]}, got {_shape(A)}")
    if do.dtype not in FLOAT_DTYPES:
        _fail("do", f"must be a floating-point tensor, got {do.dtype}", TypeError)
    if tuple(do.shape) != (B, T, HV, HEAD_DIM):
        _fail("do", f"must have o's shape {[B, T, HV, HEAD_DIM]}, got {_shape(do)}")
    if dht is not None:
        if not isinstance(dht, torch.Tensor):
            _fail("dht", f"must be a torch.Tensor or None, got {type(dht).__name__}", TypeError)
        if dht.dtype not in FLOAT_DTYPES:
            _fail("dht", f"must be a floating-point tensor, got {dht.dtype}", TypeError)
        if tuple(dht.shape) != (N, HV, HEAD_DIM, HEAD_DIM):
            layout = "[N, HV, V, K]" if state_v_first else "[N, HV, K, V]"
            _fail("dht", f"must have the final state's shape {layout} = {[N, HV, HEAD_DIM, HEAD_DIM]}, got "
                  f"{_shape(dht)}")
    if chunk_states is not None:
        if not isinstance(chunk_states, torch.Tensor):
            _fail("chunk_states", f"must be a torch.Tensor or None, got {type(chunk_states).__name__}", TypeError)
        if chunk_states.dtype != dtype:
            _fail("chunk_states", f"must have q's dtype {dtype} (the forward's output), got {chunk_states.dtype}",
                  TypeError)
        slots = num_chunk_slots(B * T, N)
        if tuple(chunk_states.shape) != (slots, HV, HEAD_DIM, HEAD_DIM):
            want = [slots, HV, HEAD_DIM, HEAD_DIM]
            _fail("chunk_states", f"must have shape [ceil(B T / 64) + N, HV, K, V] = {want} (the forward's "
                  f"output_chunk_states), got {_shape(chunk_states)}")
    for name, t in (("A", A), ("do", do), ("dht", dht), ("chunk_states", chunk_states)):
        if isinstance(t, torch.Tensor) and t.device != device:
            _fail(name, f"is on {t.device} but q is on {device}; all tensors must be on one device")
