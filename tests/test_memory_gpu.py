"""GPU memory (marked gpu): repeated forward + backward steps leave torch.cuda.memory_allocated exactly flat
(scripts/memory_flatness.py runs 10,000 of them), and each op call's peak allocation is the one
docs/memory.md gives as a function of T, N, H, HV (to the caching allocator's rounding)."""

from __future__ import annotations

import gc
import os

import pytest
import torch

import flashqla
from gdn_inputs import make_problem, ragged_cu_seqlens
from test_gdn_bwd_gpu import has_fused_kernel

pytestmark = pytest.mark.gpu
DEV = "cuda"
MiB = 2**20
ROUNDING = MiB  # per tensor: an allocation may keep a cached block up to 1 MiB larger than asked for


def test_memory_flat_over_steps():
    lengths = [900, 1, 0, 333]
    cu = ragged_cu_seqlens(lengths, DEV)
    p = make_problem(1, sum(lengths) + 50, 4, 16, device=DEV, N=len(lengths))
    do = torch.randn(1, sum(lengths) + 50, 16, 128, device=DEV)

    def one_step(l2: bool) -> None:
        leaves = {n: t.detach().clone().requires_grad_() for n, t in p.items()}
        o, ht = flashqla.chunk_gated_delta_rule(**leaves, output_final_state=True, cu_seqlens=cu,
                                                use_qk_l2norm_in_kernel=l2)
        ((o.float() * do).sum() + ht.sum()).backward()

    for i in range(4):  # warm-up (kernel setup, allocator segments)
        one_step(i % 2 == 1)
    torch.cuda.synchronize()
    allocated, reserved = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
    for i in range(300):
        one_step(i % 2 == 1)
        assert torch.cuda.memory_allocated() == allocated, f"step {i}: allocated memory grew"
    torch.cuda.synchronize()
    assert torch.cuda.memory_reserved() == reserved, "the caching allocator had to reserve more memory"


def fwd_bytes(T: int, N: int, HV: int, size: int, final: bool) -> dict[str, int]:
    """gdn_fwd's allocations (docs/memory.md): its outputs, the chunk prep's Z and the segment tables (one
    segment per sequence: these shapes do not use context parallelism)."""
    segs = 1 + N
    return {"o": T * HV * 128 * size, "g_cumsum": T * HV * 4, "A": T * HV * 64 * size, "Z": T * HV * 64 * size,
            "final_state": (N if final else 0) * HV * 128 * 128 * 4, "seg_seq": 4 * segs, "ranges": 12 * segs * HV}


def chunk_kernel_sums_groups() -> bool:
    """Whether the chunk-gradient kernel that runs here sums dq and dk over each group of v-heads (the
    SM90 program, also lowered for SM100) or writes them per v-head for the op to sum (the SM120 program;
    FLASHQLA_KERNEL_FAMILY forces a family in check builds)."""
    major, minor = torch.cuda.get_device_capability()
    return os.environ.get("FLASHQLA_KERNEL_FAMILY", f"sm{major}{minor}") != "sm120"


def bwd_bytes(T: int, N: int, H: int, HV: int, size: int, h0: bool) -> dict[str, int]:
    """gdn_bwd's allocations alive at its peak (docs/memory.md): the per-chunk states h and dh, the
    outputs, the segment tables; with the SM120 program also the per-v-head fp32 dq/dk and dk's fp32 group sum."""
    slots = (T + 63) // 64 + N
    out = {"dv": T * HV * 128 * size, "dg": T * HV * 4, "dbeta": T * HV * 4, "dh0": (N if h0 else 0) * HV * 128 * 128 * 4,
           "h": slots * HV * 128 * 128 * size, "dh": slots * HV * 128 * 128 * size,
           "dq": T * H * 128 * size, "dk": T * H * 128 * size,
           "seg_seq": 4 * (1 + N), "ranges": 12 * (1 + N) * HV}  # the state gradient's segment tables (no CP)
    if not chunk_kernel_sums_groups():
        out.update({"dq per v-head": T * HV * 128 * 4, "dk per v-head": T * HV * 128 * 4})
        if HV != H:
            out["dk group sum (fp32)"] = T * H * 128 * 4
    return out


def fused_bwd_bytes(T: int, N: int, H: int, HV: int, size: int, h0: bool) -> dict[str, int]:
    """gdn_bwd's allocations alive at its peak where the fused backward runs, without context parallelism
    (docs/memory.md): the outputs (dq and dk summed over each group by the kernel), the recomputed states h (no dh),
    the backward's segment tables and the recompute's (the forward's, alive on the side stream beside them)."""
    slots = (T + 63) // 64 + N
    tables = 4 * (1 + N) + 12 * (1 + N) * HV  # one segment per sequence: seg_seq [G], ranges [G, HV, 3]
    return {"dv": T * HV * 128 * size, "dg": T * HV * 4, "dbeta": T * HV * 4,
            "dh0": (N if h0 else 0) * HV * 128 * 128 * 4, "h": slots * HV * 128 * 128 * size,
            "dq": T * H * 128 * size, "dk": T * H * 128 * size, "backward's tables": tables, "recompute's tables": tables}


def peak_of(fn) -> int:
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    out = fn()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    del out
    return peak


@pytest.mark.parametrize("T,lengths,H,HV,h0", [(5000, [2000, 0, 2900], 4, 16, True), (4096, [1000] * 4, 2, 32, True)],
                         ids=["T5000-N3-H4-HV16", "T4096-N4-H2-HV32"])
def test_peak_allocation_per_call_matches_docs(T, lengths, H, HV, h0):
    p = make_problem(1, T, H, HV, device=DEV, N=len(lengths), h0=h0)
    cu = ragged_cu_seqlens(lengths, DEV)
    N, size = len(lengths), 2
    args = (p["q"], p["k"], p["v"], p["g"], p["beta"], 0.088, p["initial_state"], cu)
    fwd = fwd_bytes(T, N, HV, size, final=True)
    peak = peak_of(lambda: torch.ops.flashqla.gdn_fwd(*args, True, False))
    assert sum(fwd.values()) <= peak <= sum(fwd.values()) + ROUNDING * len(fwd), (peak, fwd)

    o, ht, gc_, A, _ = torch.ops.flashqla.gdn_fwd(*args, True, False)
    bargs = (p["q"], p["k"], p["v"], gc_, p["beta"], A, torch.randn_like(o), torch.randn_like(ht), 0.088,
             p["initial_state"], cu, False)
    bwd = bwd_bytes(T, N, H, HV, size, h0)
    peak = peak_of(lambda: torch.ops.flashqla.gdn_bwd(*bargs))
    assert sum(bwd.values()) <= peak <= sum(bwd.values()) + ROUNDING * len(bwd), (peak, bwd)


@pytest.mark.parametrize("T,lengths,H,HV,h0", [(777, [777], 4, 4, False), (3000, [1000, 0, 1900], 4, 8, True)],
                         ids=["T777-N1-H4-HV4-no-h0", "T3000-N3-H4-HV8"])
def test_fused_backward_peak_matches_docs(T, lengths, H, HV, h0, monkeypatch):
    """The fused backward (one v-head per qk-head, and two by its cluster variant, the defaults) without context
    parallelism (cp_segment_chunks=0: one segment per sequence in the recompute and in the backward): no dh."""
    if not has_fused_kernel(HV // H):
        pytest.skip(f"this build has no fused backward for {HV // H} v-heads per qk-head on this GPU")
    for name in ("FLASHQLA_FUSED_BWD", "FLASHQLA_FUSED_GROUPS"):
        monkeypatch.delenv(name, raising=False)
    p = make_problem(1, T, H, HV, device=DEV, N=len(lengths), h0=h0)
    cu = ragged_cu_seqlens(lengths, DEV)
    N, size = len(lengths), 2
    o, ht, gc_, A, _ = torch.ops.flashqla.gdn_fwd(p["q"], p["k"], p["v"], p["g"], p["beta"], 0.088,
                                                  p["initial_state"], cu, True, False, 0)
    bargs = (p["q"], p["k"], p["v"], gc_, p["beta"], A, torch.randn_like(o), torch.randn_like(ht), 0.088,
             p["initial_state"], cu, False, 0)
    bwd = fused_bwd_bytes(T, N, H, HV, size, h0)
    peak = peak_of(lambda: torch.ops.flashqla.gdn_bwd(*bargs))
    assert sum(bwd.values()) <= peak <= sum(bwd.values()) + ROUNDING * len(bwd), (peak, bwd)
