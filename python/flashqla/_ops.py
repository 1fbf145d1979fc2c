"""Loads the compiled op library once and adds the Python-side registrations of its ops:
the fake (Meta) implementation for torch.compile and export, and the CPU implementation,
which is the float64 reference of `reference.py` rounded to the op's output dtypes.

The schemas themselves are defined in C++ (csrc/bindings.cpp). No device is queried here.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from . import reference

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


@torch.library.register_fake("flashqla::gdn_fwd")
def _gdn_fwd_fake(q, k, v, g, beta, scale, initial_state, cu_seqlens, output_final_state, state_v_first):
    T, HV = q.shape[1], v.shape[2]
    N = cu_seqlens.shape[0] - 1
    o = v.new_empty(1, T, HV, HEAD_DIM)
    final_state = g.new_empty(N if output_final_state else 0, HV, HEAD_DIM, HEAD_DIM)
    g_cumsum = g.new_empty(1, T, HV)
    A = q.new_empty(1, T, HV, CHUNK)
    return o, final_state, g_cumsum, A


@torch.library.impl("flashqla::gdn_fwd", "CPU")
def _gdn_fwd_cpu(q, k, v, g, beta, scale, initial_state, cu_seqlens, output_final_state, state_v_first):
    gc = reference.chunk_local_cumsum_ref(g, cu_seqlens)
    A = reference.kkt_solve_ref(k, beta, cu_seqlens)
    o, final = reference.chunk_fwd_ref(q, k, v, gc, beta, A, scale, initial_state, cu_seqlens, state_v_first)
    N, HV = cu_seqlens.shape[0] - 1, v.shape[2]
    final_state = final.float() if output_final_state else g.new_empty(0, HV, HEAD_DIM, HEAD_DIM)
    return o.to(v.dtype), final_state, gc.float(), A.to(q.dtype)
