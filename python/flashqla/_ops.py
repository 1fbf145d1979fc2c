"""Loads the compiled op library once and adds the Python-side registrations of its ops:
the fake (Meta) implementations for torch.compile and export, the CPU implementations (the CUDA op
layer's argument checks, `op_checks.py`, then the float64 reference of `reference.py` rounded to the
op's output dtypes) and the autograd formula of gdn_fwd (its backward is the op gdn_bwd, given the
forward's chunk states when gdn_fwd was asked for them), so compiled graphs keep the backward; gdn_prefill's
backward raises (the inference op keeps nothing for one).

The schemas themselves are defined in C++ (csrc/bindings.cpp). No device is queried here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch

from . import op_checks, reference

_LIB_NAME = "libflashqla_ops.so"
_PKG_DIR = Path(__file__).resolve().parent
CHUNK = 64
HEAD_DIM = 128


def _load_library() -> Path:
    path = _PKG_DIR / _LIB_NAME
    if not path.exists():
        raise ImportError(
            f"flashqla: the compiled op library {path} is missing. Install the package "
            "(`pip install flashqla`, or `pip install .` in a source checkout) instead of importing "
            "the source tree.")
    if not hasattr(torch.ops.flashqla, "gdn_fwd"):
        # loading a second copy that registers the same namespace aborts the process: load once
        torch.ops.load_library(str(path))
    return path


LIBRARY_PATH = _load_library()


def build_manifest() -> dict:
    """What the installed library was built from: archs, kernel variants, TileLang version."""
    path = _PKG_DIR / "build_manifest.json"
    return json.loads(path.read_text()) if path.exists() else {}


def kernel_family(cc: tuple[int, int]) -> str:
    """The kernel family a GPU of compute capability cc runs: 'sm90' for (9, 0), 'sm120' for (12, 0), or
    FLASHQLA_KERNEL_FAMILY when set (as the op layer decides, csrc/ops/dispatch.h)."""
    return os.environ.get("FLASHQLA_KERNEL_FAMILY") or f"sm{cc[0]}{cc[1]}"


def unsupported_gpu_reason(device: int | None = None) -> str | None:
    """None when the installed library has kernels for the GPU (of the family it would run), else why not."""
    if not torch.cuda.is_available():
        return "no CUDA GPU (torch.cuda.is_available() is False)"
    cc = torch.cuda.get_device_capability(device)
    family = kernel_family(cc)
    kernels = build_manifest().get("kernels", [])
    if any(k["arch"] == f"sm_{cc[0]}{cc[1]}a" and k.get("family") == family for k in kernels):
        return None
    have = sorted({k["arch"] + (f" ({k['family']} family)" if k.get("check_variant") else "") for k in kernels})
    return (f"this GPU is sm_{cc[0]}{cc[1]} (kernel family {family}); the installed library has kernels for "
            f"{', '.join(have) or 'no GPU'}")


@torch.library.register_fake("flashqla::gdn_fwd")
def _gdn_fwd_fake(q, k, v, g, beta, scale, initial_state, cu_seqlens, output_final_state, state_v_first,
                  cp_segment_chunks=-1, output_chunk_states=False, max_seqlen=0):
    T, HV = q.shape[1], v.shape[2]
    N = cu_seqlens.shape[0] - 1
    o = v.new_empty(1, T, HV, HEAD_DIM)
    final_state = g.new_empty(N if output_final_state else 0, HV, HEAD_DIM, HEAD_DIM)
    g_cumsum = g.new_empty(1, T, HV)
    A = q.new_empty(1, T, HV, CHUNK)
    chunk_states = q.new_empty(op_checks.num_chunk_slots(T, N) if output_chunk_states else 0, HV, HEAD_DIM,
                               HEAD_DIM)
    return o, final_state, g_cumsum, A, chunk_states


@torch.library.impl("flashqla::gdn_fwd", "CPU")
def _gdn_fwd_cpu(q, k, v, g, beta, scale, initial_state, cu_seqlens, output_final_state, state_v_first,
                 cp_segment_chunks=-1, output_chunk_states=False, max_seqlen=0):
    # the float64 reference has no segments: cp_segment_chunks and max_seqlen change nothing here (checked)
    T, _, HV, N = op_checks.check_gdn_inputs("flashqla::gdn_fwd", q, k, v, "g", g, beta, initial_state, cu_seqlens,
                                             state_v_first)
    op_checks.check_max_seqlen("flashqla::gdn_fwd", max_seqlen, T)
    gc = reference.chunk_local_cumsum_ref(g, cu_seqlens)
    A = reference.kkt_solve_ref(k, beta, cu_seqlens)
    # the slots no chunk owns stay 0 here (unspecified on CUDA)
    states = torch.zeros(op_checks.num_chunk_slots(T, N) if output_chunk_states else 0, HV, HEAD_DIM, HEAD_DIM,
                         dtype=torch.float64)
    o, final = reference.chunk_fwd_ref(q, k, v, gc, beta, A, scale, initial_state, cu_seqlens, state_v_first,
                                       states if output_chunk_states else None)
    final_state = final.float() if output_final_state else g.new_empty(0, HV, HEAD_DIM, HEAD_DIM)
    return o.to(v.dtype), final_state, gc.float(), A.to(q.dtype), states.to(q.dtype)


@torch.library.register_fake("flashqla::gdn_prefill")
def _gdn_prefill_fake(q, k, v, g, beta, scale, initial_state, cu_seqlens, output_final_state, state_v_first,
                      cp_segment_chunks=-1, max_seqlen=0):
    T, HV = q.shape[1], v.shape[2]
    N = cu_seqlens.shape[0] - 1
    return v.new_empty(1, T, HV, HEAD_DIM), g.new_empty(N if output_final_state else 0, HV, HEAD_DIM, HEAD_DIM)


@torch.library.impl("flashqla::gdn_prefill", "CPU")
def _gdn_prefill_cpu(q, k, v, g, beta, scale, initial_state, cu_seqlens, output_final_state, state_v_first,
                     cp_segment_chunks=-1, max_seqlen=0):
    # gdn_fwd's reference, its intermediates dropped (the same checks, under this op's name)
    op = "flashqla::gdn_prefill"
    T, _, HV, N = op_checks.check_gdn_inputs(op, q, k, v, "g", g, beta, initial_state, cu_seqlens, state_v_first)
    op_checks.check_max_seqlen(op, max_seqlen, T)
    gc = reference.chunk_local_cumsum_ref(g, cu_seqlens)
    A = reference.kkt_solve_ref(k, beta, cu_seqlens)
    o, final = reference.chunk_fwd_ref(q, k, v, gc, beta, A, scale, initial_state, cu_seqlens, state_v_first)
    final_state = final.float() if output_final_state else g.new_empty(0, HV, HEAD_DIM, HEAD_DIM)
    return o.to(v.dtype), final_state


@torch.library.register_fake("flashqla::gdn_bwd")
def _gdn_bwd_fake(q, k, v, g_cumsum, beta, A, do, dht, scale, initial_state, cu_seqlens, state_v_first,
                  cp_segment_chunks=-1, chunk_states=None, max_seqlen=0):
    N, HV = cu_seqlens.shape[0] - 1, v.shape[2]
    dh0 = g_cumsum.new_empty(N if initial_state is not None else 0, HV, HEAD_DIM, HEAD_DIM)
    return (torch.empty_like(q), torch.empty_like(k), torch.empty_like(v), torch.empty_like(g_cumsum),
            torch.empty_like(g_cumsum), dh0)


@torch.library.impl("flashqla::gdn_bwd", "CPU")
def _gdn_bwd_cpu(q, k, v, g_cumsum, beta, A, do, dht, scale, initial_state, cu_seqlens, state_v_first,
                 cp_segment_chunks=-1, chunk_states=None, max_seqlen=0):
    # the reference recomputes the chunk states in float64: chunk_states is checked, not read
    op = "flashqla::gdn_bwd"
    T, _, HV, N = op_checks.check_gdn_inputs(op, q, k, v, "g_cumsum", g_cumsum, beta, initial_state, cu_seqlens,
                                             state_v_first)
    op_checks.check_bwd_extras(op, A, do, dht, T, HV, N, q.dtype, state_v_first, chunk_states)
    op_checks.check_max_seqlen(op, max_seqlen, T)
    dq, dk, dv, dg, dbeta, dh0 = reference.chunk_bwd_ref(q, k, v, g_cumsum, beta, do, dht, scale, initial_state,
                                                         cu_seqlens, state_v_first)
    dh0 = dh0.float() if dh0 is not None else g_cumsum.new_empty(0, v.shape[2], HEAD_DIM, HEAD_DIM)
    return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype), dg.float(), dbeta.float(), dh0


def _gdn_fwd_setup_context(ctx, inputs, output):
    q, k, v, g, beta, scale, initial_state, cu_seqlens, output_final_state, state_v_first = inputs[:10]
    cp_segment_chunks = inputs[10] if len(inputs) > 10 else -1
    output_chunk_states = inputs[11] if len(inputs) > 11 else False
    max_seqlen = inputs[12] if len(inputs) > 12 else 0
    _, _, g_cumsum, A, chunk_states = output
    # the chunk-local cumsum, the inverse and the chunk states are intermediates: they carry no gradient
    ctx.mark_non_differentiable(g_cumsum, A, chunk_states)
    # no zero-filled gradients for them (a fill of A's size per step): the backward gets None instead
    ctx.set_materialize_grads(False)
    # the forward's chunk states, when it kept them, spare the backward their recomputation
    ctx.save_for_backward(q, k, v, g_cumsum, beta, A, initial_state, cu_seqlens,
                          chunk_states if output_chunk_states else None)
    ctx.scale = scale
    ctx.state_v_first = state_v_first
    ctx.cp_segment_chunks = cp_segment_chunks
    ctx.max_seqlen = max_seqlen


def _gdn_fwd_backward(ctx, d_o, d_final_state, _d_g_cumsum, _d_A, _d_chunk_states):
    q, k, v, g_cumsum, beta, A, initial_state, cu_seqlens, chunk_states = ctx.saved_tensors
    dht = d_final_state if d_final_state is not None and d_final_state.numel() > 0 else None
    if d_o is None:
        d_o = torch.zeros_like(v)
    dq, dk, dv, dg, dbeta, dh0 = torch.ops.flashqla.gdn_bwd(
        q, k, v, g_cumsum, beta, A, d_o.contiguous(), None if dht is None else dht.contiguous(), ctx.scale,
        initial_state, cu_seqlens, ctx.state_v_first, ctx.cp_segment_chunks, chunk_states, ctx.max_seqlen)
    return (dq, dk, dv, dg, dbeta, None, (dh0 if initial_state is not None else None), None, None, None, None, None,
            None)


torch.library.register_autograd("flashqla::gdn_fwd", _gdn_fwd_backward, setup_context=_gdn_fwd_setup_context)


def _gdn_prefill_setup_context(ctx, inputs, output):
    pass


def _gdn_prefill_backward(ctx, d_o, d_final_state):
    # registered so that a backward through the inference op fails loudly instead of leaving the inputs without
    # gradients
    raise RuntimeError("flashqla::gdn_prefill has no backward (it keeps nothing for one): call "
                       "flashqla.chunk_gated_delta_rule with gradients enabled, or flashqla::gdn_fwd")


torch.library.register_autograd("flashqla::gdn_prefill", _gdn_prefill_backward,
                                setup_context=_gdn_prefill_setup_context)
