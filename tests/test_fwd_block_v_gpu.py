"""The fused forward's V-slice widths on the GPU (sm90 family): BV = 64 (two CTAs per head and
segment), BV = 128 (one; one S~ buffer and one X buffer) and BV = 32 (four; never chosen by the plan, only
forced), forced through FLASHQLA_FWD_BLOCK_V, each
against the float64 reference and against each other, on the shapes whose code paths differ: partial
chunks and the padding tail, sequences of length 0 and 1, initial and final states in both layouts, fp16,
context parallelism (warm-up pass and exact fallback) and the backward (the override also reaches its state
recompute, which stores S~ per chunk; left to the op, the recompute's width is the forward's, by the same
segment model).

Outputs are NaN-poisoned before every kernel run (conftest sets FLASHQLA_POISON_OUTPUTS).
"""

from __future__ import annotations

import pytest
import torch

import flashqla
from flashqla.reference import gdn_chunk_ref
from gdn_inputs import (TOL, check_packed_forward, check_training_gradients, forward_reference, make_problem,
                        needs_sm90_kernel, packed_forward, ragged_cu_seqlens, record, rel_err)

pytestmark = pytest.mark.gpu
DEV = "cuda"
# the widths round alike (each output element sums the same products in the same order); allow the
# rounding of either against float64 all the same
TOL_WIDTHS = 1e-2

CASES = {
    # name: (H, HV, lengths, padding tail, dtype)
    "dense 1x4096 H16/HV64": (16, 64, [4096], 0, torch.bfloat16),
    "ragged+tail H2/HV8": (2, 8, [1, 0, 130, 64, 1000, 63], 77, torch.bfloat16),
    "short H4/HV16 fp16": (4, 16, [65, 1, 200], 5, torch.float16),
}


needs_wide = needs_sm90_kernel("the 128-wide forward")


def forward(p, cu, monkeypatch, block_v, state_v_first=False, cp_segment_chunks=-1):
    return packed_forward(p, cu, monkeypatch, {"FLASHQLA_FWD_BLOCK_V": str(block_v)}, state_v_first,
                          cp_segment_chunks)


@needs_wide
@pytest.mark.parametrize("state_v_first", [False, True], ids=["KV", "VK"])
@pytest.mark.parametrize("case", list(CASES))
def test_widths_match_reference_and_each_other(case, state_v_first, monkeypatch):
    H, HV, lengths, tail, dtype = CASES[case]
    cu = ragged_cu_seqlens(lengths, DEV)
    p = make_problem(1, sum(lengths) + tail, H, HV, dtype=dtype, device=DEV, N=len(lengths),
                     state_v_first=state_v_first)
    o_ref, ht_ref = forward_reference(p, cu, lengths, state_v_first)
    outs = {}
    for block_v in (128, 64, 32):
        out = forward(p, cu, monkeypatch, block_v, state_v_first)
        check_packed_forward(out, o_ref, ht_ref, p["initial_state"], lengths,
                             f"{case} BV={block_v} v_first={state_v_first}")
        outs[block_v] = out
    for block_v in (128, 32):
        assert rel_err(outs[block_v].o, outs[64].o.double()) <= TOL_WIDTHS, f"o at BV={block_v} against 64"
        assert rel_err(outs[block_v].final_state, outs[64].final_state.double()) <= TOL_WIDTHS, \
            f"final_state at BV={block_v} against 64"


@needs_wide
@pytest.mark.parametrize("block_v", [128, 32])
@pytest.mark.parametrize("gate", ["strong", "mild"])
@pytest.mark.parametrize("cp_segment_chunks", [1, 3, -1])
def test_wide_with_context_parallelism(cp_segment_chunks, gate, block_v, monkeypatch):
    """BV = 128 and 32 through the warm-up pass (decaying heads) and the transition-matrix fallback (g = 0 heads)."""
    lengths = [3000, 1, 0, 700, 64, 5000]
    cu = ragged_cu_seqlens(lengths, DEV)
    p = make_problem(1, sum(lengths) + 90, 2, 8, device=DEV, gate=gate, N=len(lengths))
    o_ref, ht_ref = gdn_chunk_ref(p["q"], p["k"], p["v"], p["g"], p["beta"], initial_state=p["initial_state"],
                                  output_final_state=True, cu_seqlens=cu)
    out = forward(p, cu, monkeypatch, block_v, cp_segment_chunks=cp_segment_chunks)
    what = f"BV={block_v} cp_segment_chunks={cp_segment_chunks} gate={gate}"
    assert record("o", rel_err(out.o, o_ref), what) <= TOL["o"], what
    assert record("final_state", rel_err(out.final_state, ht_ref), what) <= TOL["final_state"], what
    assert torch.all(out.o[0, sum(lengths):] == 0), f"{what}: padding tail not zero"


@needs_wide
@pytest.mark.parametrize("block_v", [128, 64, 32])
def test_backward_through_either_width(block_v, monkeypatch):
    """Autograd with the forward (and the backward's state recompute, which stores S~ per chunk through the
    storer warp) forced to one width: every gradient against the float64 chunked backward."""
    lengths = [1000, 1, 333]
    cu = ragged_cu_seqlens(lengths, DEV)
    p = make_problem(1, sum(lengths) + 20, 4, 16, device=DEV, N=len(lengths))
    names = ("q", "k", "v", "g", "beta", "initial_state")
    leaves = {n: p[n].clone().requires_grad_(True) for n in names}
    monkeypatch.setenv("FLASHQLA_FWD_BLOCK_V", str(block_v))
    o, ht = flashqla.chunk_gated_delta_rule(**leaves, output_final_state=True, cu_seqlens=cu)
    check_training_gradients(p, cu, leaves, o, ht, f"BV={block_v} autograd")  # (the recompute at the width too)
    monkeypatch.delenv("FLASHQLA_FWD_BLOCK_V")


def test_block_v_override_is_checked(monkeypatch):
    p = make_problem(1, 64, 2, 8, device=DEV)
    monkeypatch.setenv("FLASHQLA_FWD_BLOCK_V", "96")
    with pytest.raises(RuntimeError, match="FLASHQLA_FWD_BLOCK_V"):
        flashqla.chunk_gated_delta_rule(**p)
