"""The register-operand forward (tilelang_src/sm90/gdn_fwd_rs.py, FLASHQLA_FWD_RS=1) on the GPU (sm90 family): it
runs the forward's main pass at either V-slice width (forced here through FLASHQLA_FWD_BLOCK_V), so every case is
checked at both widths against the float64 reference and against the default kernel of that width on the same inputs,
on the shapes whose code paths differ: partial chunks and the padding tail, sequences of length 0 and 1, initial and
final states in both layouts (the state is held transposed, S^T, so both layouts are loads and stores across rows),
fp16, context parallelism (segments starting from the correction walk's states), and a training step (the backward's
state recompute stays on the default kernel, which stores the chunk states). A profiler run checks that the kernel
really ran.

Outputs are NaN-poisoned before every kernel run (conftest sets FLASHQLA_POISON_OUTPUTS).
"""

from __future__ import annotations

import pytest
import torch

import flashqla
from flashqla.reference import gdn_chunk_ref
from gdn_inputs import (check_packed_forward, check_training_gradients, forward_reference, make_problem,
                        needs_sm90_kernel, packed_forward, ragged_cu_seqlens, rel_err)

pytestmark = pytest.mark.gpu
DEV = "cuda"
# the two kernels round the same bf16 operands but sum O's two products in another order; allow the rounding of
# either against float64 (as test_fwd_block_v_gpu.py does for the two widths)
TOL_KERNELS = 1e-2

CASES = {
    # name: (H, HV, lengths, padding tail, dtype)
    "dense 1x4096 H16/HV32": (16, 32, [4096], 0, torch.bfloat16),
    "ragged+tail H2/HV8": (2, 8, [1, 0, 130, 64, 1000, 63], 77, torch.bfloat16),
    "short H4/HV16 fp16": (4, 16, [65, 1, 200], 5, torch.float16),
}

needs_wide = needs_sm90_kernel("the register-operand forward")


def forward(p, cu, monkeypatch, rs, block_v, state_v_first=False, cp_segment_chunks=-1):
    env = {"FLASHQLA_FWD_BLOCK_V": str(block_v), "FLASHQLA_FWD_RS": "1" if rs else "0"}
    return packed_forward(p, cu, monkeypatch, env, state_v_first, cp_segment_chunks)


@needs_wide
@pytest.mark.parametrize("block_v", [128, 64])
@pytest.mark.parametrize("state_v_first", [False, True], ids=["KV", "VK"])
@pytest.mark.parametrize("case", list(CASES))
def test_rs_matches_reference_and_the_default_kernel(case, state_v_first, block_v, monkeypatch):
    H, HV, lengths, tail, dtype = CASES[case]
    cu = ragged_cu_seqlens(lengths, DEV)
    p = make_problem(1, sum(lengths) + tail, H, HV, dtype=dtype, device=DEV, N=len(lengths),
                     state_v_first=state_v_first)
    o_ref, ht_ref = forward_reference(p, cu, lengths, state_v_first)
    outs = {}
    for rs in (True, False):
        out = forward(p, cu, monkeypatch, rs, block_v, state_v_first)
        check_packed_forward(out, o_ref, ht_ref, p["initial_state"], lengths,
                             f"{case} rs={rs} BV={block_v} v_first={state_v_first}")
        outs[rs] = out
    assert rel_err(outs[True].o, outs[False].o.double()) <= TOL_KERNELS
    assert rel_err(outs[True].final_state, outs[False].final_state.double()) <= TOL_KERNELS


@needs_wide
@pytest.mark.parametrize("block_v", [128, 64])
@pytest.mark.parametrize("gate", ["strong", "mild"])
@pytest.mark.parametrize("cp_segment_chunks", [1, 3, -1])
def test_rs_with_context_parallelism(cp_segment_chunks, gate, block_v, monkeypatch):
    """The main pass from the correction walk's segment states (warm-up pass for decaying heads, transition
    matrices for g = 0 heads: both by the default kernel)."""
    lengths = [3000, 1, 0, 700, 64, 5000]
    cu = ragged_cu_seqlens(lengths, DEV)
    p = make_problem(1, sum(lengths) + 90, 2, 8, device=DEV, gate=gate, N=len(lengths))
    o_ref, ht_ref = gdn_chunk_ref(p["q"], p["k"], p["v"], p["g"], p["beta"], initial_state=p["initial_state"],
                                  output_final_state=True, cu_seqlens=cu)
    out = forward(p, cu, monkeypatch, True, block_v, cp_segment_chunks=cp_segment_chunks)
    check_packed_forward(out, o_ref, ht_ref, p["initial_state"], lengths,
                         f"rs BV={block_v} cp_segment_chunks={cp_segment_chunks} gate={gate}")


@needs_wide
@pytest.mark.parametrize("block_v", [128, 64])
def test_rs_kernel_runs_and_training_step(block_v, monkeypatch):
    """FLASHQLA_FWD_RS=1 runs gdn_fwd_rs (profiler) in the forward of a training step; every gradient against the
    float64 chunked backward."""
    lengths = [1000, 1, 333]
    cu = ragged_cu_seqlens(lengths, DEV)
    p = make_problem(1, sum(lengths) + 20, 4, 16, device=DEV, N=len(lengths))
    names = ("q", "k", "v", "g", "beta", "initial_state")
    leaves = {n: p[n].clone().requires_grad_(True) for n in names}
    monkeypatch.setenv("FLASHQLA_FWD_BLOCK_V", str(block_v))
    monkeypatch.setenv("FLASHQLA_FWD_RS", "1")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        o, ht = flashqla.chunk_gated_delta_rule(**leaves, output_final_state=True, cu_seqlens=cu)
        torch.cuda.synchronize()
    assert any("gdn_fwd_rs" in e.key for e in prof.key_averages()), "FLASHQLA_FWD_RS=1 did not run gdn_fwd_rs"
    check_training_gradients(p, cu, leaves, o, ht, f"rs BV={block_v} autograd")


@needs_wide
@pytest.mark.parametrize("setting,block_v,runs", [(None, 64, False), (None, 128, False), ("0", 64, False),
                                                  ("1", 64, True), ("1", 128, True)])
def test_rs_setting_widths(setting, block_v, runs, monkeypatch):
    """FLASHQLA_FWD_RS unset or "0" runs the default forward at either width, "1" the register-operand forward at
    both (csrc/ops/dispatch.h fwd_rs_requested; profiler). FLASHQLA_FWD_NOPREP=0: a prefill at BV = 128 otherwise
    runs the prep-free forward (gdn_fwd.cpp noprep_plan), which has no register-operand twin."""
    p = make_problem(1, 512, 2, 8, device=DEV)
    monkeypatch.setenv("FLASHQLA_FWD_BLOCK_V", str(block_v))
    monkeypatch.setenv("FLASHQLA_FWD_NOPREP", "0")
    if setting is None:
        monkeypatch.delenv("FLASHQLA_FWD_RS", raising=False)
    else:
        monkeypatch.setenv("FLASHQLA_FWD_RS", setting)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        flashqla.chunk_gated_delta_rule(**p)
        torch.cuda.synchronize()
    ran = any("gdn_fwd_rs" in e.key for e in prof.key_averages())
    assert ran == runs, f"FLASHQLA_FWD_RS={setting} at BV={block_v}: gdn_fwd_rs ran: {ran}, expected {runs}"


def test_rs_setting_is_checked(monkeypatch):
    p = make_problem(1, 64, 2, 8, device=DEV)
    monkeypatch.setenv("FLASHQLA_FWD_RS", "yes")
    with pytest.raises(RuntimeError, match="FLASHQLA_FWD_RS"):
        flashqla.chunk_gated_delta_rule(**p)
