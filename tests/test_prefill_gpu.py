"""flashqla::gdn_prefill on the GPU (sm90 family). It runs the forward without the chunk prep
(tilelang_src/sm90/gdn_fwd_noprep.py: the inverse, the gates' cumsum and Q K^T formed in the kernel) where the plan
runs the 128-wide V slice, with or without context parallelism, at any group of v-heads per qk-head
(FLASHQLA_FWD_NOPREP=0: never); elsewhere the chunk prep and the fused forward. Checked against the
float64 reference and against gdn_fwd on the same inputs on the shapes whose code paths differ (partial chunks,
sequences of length 0 and 1, a padding tail, initial and final states in both layouts, fp16, strong and absent decay,
gates that grow, forced context parallelism with warm-up and the exact fallback); a profiler run checks which kernels
ran, also where the plan falls back (the 64-wide slice). chunk_gated_delta_rule under
torch.no_grad goes through it.

Outputs are NaN-poisoned before every kernel run (conftest sets FLASHQLA_POISON_OUTPUTS).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

import flashqla
from gdn_inputs import (check_packed_forward, forward_reference, kernels_of, make_problem, needs_sm90_kernel,
                        ragged_cu_seqlens, rel_err)

pytestmark = pytest.mark.gpu
DEV = "cuda"
# the two paths round different bf16 operands (G and U here, A, X and Z there); allow either's rounding against float64
TOL_PATHS = 1e-2

CASES = {
    # name: (H, HV, lengths, padding tail, dtype, gate)
    "ragged+tail H8/HV32": (8, 32, [1, 0, 130, 64, 1000, 63], 77, torch.bfloat16, "strong"),
    "4x2048 H16/HV32": (16, 32, [2048] * 4, 0, torch.bfloat16, "strong"),
    "mild fp16 H4/HV16": (4, 16, [65, 1, 200, 700], 5, torch.float16, "mild"),
    # g > 0 on some tokens (not a GDN model's gate, but the op takes it): the kernel's gating must not assume the sign
    "growing H8/HV8": (8, 8, [300, 64, 5], 3, torch.bfloat16, "growing"),
}

needs_noprep = needs_sm90_kernel("the forward without the chunk prep")


def prefill(p, cu, lengths, monkeypatch, noprep, state_v_first=False, cp_segment_chunks=0, block_v="128"):
    """torch.ops.flashqla.gdn_prefill on the packed problem; FLASHQLA_FWD_NOPREP (True: 1, False: 0, None: unset) and
    FLASHQLA_FWD_BLOCK_V for this call only (cp_segment_chunks = 0 and the 128-wide slice: the plan the kernel
    takes)."""
    monkeypatch.setenv("FLASHQLA_FWD_NOPREP", "1" if noprep else "0")
    if noprep is None:
        monkeypatch.delenv("FLASHQLA_FWD_NOPREP")
    monkeypatch.setenv("FLASHQLA_FWD_BLOCK_V", block_v)
    T = p["q"].shape[1]
    h0 = p["initial_state"]
    o, ht = torch.ops.flashqla.gdn_prefill(p["q"], p["k"], p["v"], p["g"].float(), p["beta"].float(), 128 ** -0.5,
                                          h0, cu, True, state_v_first, cp_segment_chunks, max(lengths))
    monkeypatch.delenv("FLASHQLA_FWD_NOPREP", raising=False)
    monkeypatch.delenv("FLASHQLA_FWD_BLOCK_V")
    return SimpleNamespace(o=o.view(1, T, *o.shape[2:]), final_state=ht)


@needs_noprep
@pytest.mark.parametrize("state_v_first", [False, True], ids=["KV", "VK"])
@pytest.mark.parametrize("case", list(CASES))
def test_noprep_matches_reference_and_gdn_fwd(case, state_v_first, monkeypatch):
    H, HV, lengths, tail, dtype, gate = CASES[case]
    cu = ragged_cu_seqlens(lengths, DEV)
    p = make_problem(1, sum(lengths) + tail, H, HV, dtype=dtype, device=DEV, N=len(lengths),
                     gate="mild" if gate == "growing" else gate, state_v_first=state_v_first)
    if gate == "growing":
        p["g"] = p["g"] + 0.05 * torch.rand_like(p["g"])
    o_ref, ht_ref = forward_reference(p, cu, lengths, state_v_first)
    outs = {}
    for noprep in (True, False):
        out = prefill(p, cu, lengths, monkeypatch, noprep, state_v_first)
        check_packed_forward(out, o_ref, ht_ref, p["initial_state"], lengths,
                             f"{case} noprep={noprep} v_first={state_v_first}")
        outs[noprep] = out
    assert rel_err(outs[True].o, outs[False].o.double()) <= TOL_PATHS
    assert rel_err(outs[True].final_state, outs[False].final_state.double()) <= TOL_PATHS


@needs_noprep
def test_noprep_kernel_runs_only_where_asked(monkeypatch):
    """FLASHQLA_FWD_NOPREP=1 runs gdn_fwd_noprep and no chunk prep, also with context parallelism forced (then with
    the chunk decays for the plan and the correction walk); 0 runs the prep and not it; with the 64-wide slice the
    setting falls back to the prep (and stays correct)."""
    lengths = [1000, 1, 3000]
    cu = ragged_cu_seqlens(lengths, DEV)
    p = make_problem(1, sum(lengths) + 9, 4, 16, device=DEV, N=len(lengths))
    o_ref, ht_ref = forward_reference(p, cu, lengths)
    runs = {}
    for what, kwargs in {"noprep": dict(noprep=True), "default": dict(noprep=False),
                         "cp": dict(noprep=True, cp_segment_chunks=4), "bv64": dict(noprep=True, block_v="64")}.items():
        names = kernels_of(lambda: runs.__setitem__(what, prefill(p, cu, lengths, monkeypatch, **kwargs)))
        has_np = any("gdn_fwd_noprep" in n for n in names)
        has_prep = any("gdn_chunk_prep" in n for n in names)
        has_cp = [any(k in n for n in names) for k in ("gdn_chunk_decay", "gdn_cp_correct")]
        assert (has_np, has_prep) == ((True, False) if what in ("noprep", "cp") else (False, True)), (what, names)
        assert has_cp == [what == "cp"] * 2, (what, names)
        check_packed_forward(runs[what], o_ref, ht_ref, p["initial_state"], lengths, f"fallback {what}")


CP_CASES = {
    # name: (H, HV, lengths, padding tail)
    "1x4096 H4/HV4": (4, 4, [4096], 0),
    "ragged H4/HV4": (4, 4, [3000, 1, 0, 700, 64, 5000], 90),
}


@needs_noprep
@pytest.mark.parametrize("state_v_first", [False, True], ids=["KV", "VK"])
@pytest.mark.parametrize("gate", ["strong", "mild"])
@pytest.mark.parametrize("case", list(CP_CASES))
def test_noprep_cp_matches_reference_and_prep(case, gate, state_v_first, monkeypatch):
    """Context parallelism in the forward without the chunk prep (forced: short segments, so that a sequence has
    many): the warm-up pass of the same kernel, the exact fallback for the heads without decay ('strong': a quarter
    of the heads at g = 0; 'mild' needs several chunks of warm-up), the correction walk. Against float64, and
    against the prep path with the same segments (TOL_PATHS)."""
    H, HV, lengths, tail = CP_CASES[case]
    cu = ragged_cu_seqlens(lengths, DEV)
    p = make_problem(1, sum(lengths) + tail, H, HV, device=DEV, N=len(lengths), gate=gate,
                     state_v_first=state_v_first)
    o_ref, ht_ref = forward_reference(p, cu, lengths, state_v_first)
    for cp in (1, 3, 8):
        outs = {}
        for noprep in (True, False):
            out = prefill(p, cu, lengths, monkeypatch, noprep, state_v_first, cp_segment_chunks=cp)
            check_packed_forward(out, o_ref, ht_ref, p["initial_state"], lengths,
                                 f"{case} gate={gate} cp={cp} noprep={noprep} v_first={state_v_first}")
            outs[noprep] = out
        assert rel_err(outs[True].o, outs[False].o.double()) <= TOL_PATHS, f"cp={cp}"
        assert rel_err(outs[True].final_state, outs[False].final_state.double()) <= TOL_PATHS, f"cp={cp}"


@needs_noprep
@pytest.mark.parametrize("H, HV, block_v, runs", [(8, 8, "128", True), (4, 8, "128", True), (2, 8, "128", True),
                                                  (4, 8, "64", False)],
                         ids=["group 1", "group 2", "group 4", "group 2 at BV 64"])
def test_noprep_default_any_group(H, HV, block_v, runs, monkeypatch):
    """FLASHQLA_FWD_NOPREP unset: the kernel at any group of v-heads per qk-head where the plan takes the 128-wide
    slice, the chunk prep where it takes the 64-wide one; correct either way."""
    lengths = [700, 64, 1]
    cu = ragged_cu_seqlens(lengths, DEV)
    p = make_problem(1, sum(lengths), H, HV, device=DEV, N=len(lengths))
    o_ref, ht_ref = forward_reference(p, cu, lengths)
    out = {}
    names = kernels_of(lambda: out.__setitem__("o", prefill(p, cu, lengths, monkeypatch, None, block_v=block_v)))
    assert any("gdn_fwd_noprep" in n for n in names) == runs, names
    assert any("gdn_chunk_prep" in n for n in names) != runs, names
    check_packed_forward(out["o"], o_ref, ht_ref, p["initial_state"], lengths, f"default H={H} HV={HV} BV={block_v}")


@needs_noprep
def test_api_no_grad_runs_prefill(monkeypatch):
    """flashqla.chunk_gated_delta_rule under torch.no_grad (dense batch) with FLASHQLA_FWD_NOPREP=1 runs the kernel
    and agrees with the call that keeps the autograd graph (the chunk prep and the fused forward)."""
    p = make_problem(4, 1024, 8, 32, device=DEV)
    monkeypatch.setenv("FLASHQLA_FWD_NOPREP", "1")
    args = (p["q"], p["k"], p["v"], p["g"], p["beta"])
    with torch.no_grad():
        names = kernels_of(lambda: flashqla.chunk_gated_delta_rule(*args, initial_state=p["initial_state"],
                                                                   output_final_state=True))
        o_inf, ht_inf = flashqla.chunk_gated_delta_rule(*args, initial_state=p["initial_state"],
                                                        output_final_state=True)
    assert any("gdn_fwd_noprep" in n for n in names), names
    v = p["v"].detach().requires_grad_()
    o, ht = flashqla.chunk_gated_delta_rule(p["q"], p["k"], v, p["g"], p["beta"], initial_state=p["initial_state"],
                                            output_final_state=True)
    assert o.requires_grad and not o_inf.requires_grad
    assert rel_err(o_inf, o.detach().double()) <= TOL_PATHS
    assert rel_err(ht_inf, ht.detach().double()) <= TOL_PATHS


@needs_noprep
def test_noprep_setting_is_checked(monkeypatch):
    p = make_problem(1, 128, 2, 4, device=DEV)
    cu = ragged_cu_seqlens([128], DEV)
    monkeypatch.setenv("FLASHQLA_FWD_NOPREP", "yes")
    with pytest.raises(RuntimeError, match="FLASHQLA_FWD_NOPREP must be 0 or 1"):
        torch.ops.flashqla.gdn_prefill(p["q"], p["k"], p["v"], p["g"], p["beta"], 0.088, None, cu, True, False)
