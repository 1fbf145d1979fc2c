"""The training forward without the whole chunk prep (FLASHQLA_TRAIN_NOPREP=1, sm90 family): flashqla::gdn_fwd runs
the chunk prep without Z (tilelang_src/variants.py's gdn_chunk_prep_a: g_cumsum and A, what the backward reads) and
the prep-free forward (tilelang_src/sm90/gdn_fwd_noprep.py) for o and the final state, where gdn_prefill would run
that kernel (the 128-wide slice) and no chunk states are asked for. Checked: which kernels ran (profiler); o and the
final state against float64 and against the default path on the same inputs; g_cumsum and A bit for bit the default
path's (the same prep program but for Z); every gradient of a training step against the float64 chunked backward;
the fallbacks (the 64-wide slice, chunk states asked for) and the setting's check.

Outputs are NaN-poisoned before every kernel run (conftest sets FLASHQLA_POISON_OUTPUTS).
"""

from __future__ import annotations

import pytest
import torch

import flashqla
from gdn_inputs import (check_packed_forward, check_training_gradients, forward_reference, kernels_of, make_problem,
                        needs_sm90_kernel, ragged_cu_seqlens, rel_err)

pytestmark = pytest.mark.gpu
DEV = "cuda"
# the two paths round different bf16 operands (G and U there, A, X and Z here); allow either's rounding against
# float64 (as tests/test_prefill_gpu.py does for the same two forwards)
TOL_PATHS = 1e-2

CASES = {
    # name: (H, HV, lengths, padding tail, dtype, gate)
    "ragged+tail H8/HV32": (8, 32, [1, 0, 130, 64, 1000, 63], 77, torch.bfloat16, "strong"),
    "4x1024 H16/HV16": (16, 16, [1024] * 4, 0, torch.bfloat16, "strong"),
    "mild fp16 H4/HV16": (4, 16, [65, 1, 200, 700], 5, torch.float16, "mild"),
}

needs_train_noprep = needs_sm90_kernel("the chunk prep without Z and the prep-free forward")


def forward(p, cu, monkeypatch, train_noprep: bool, state_v_first=False, block_v="128", chunk_states=False,
            cp_segment_chunks=0):
    """flashqla.chunk_gated_delta_rule_fwd with FLASHQLA_TRAIN_NOPREP (1 or 0) and FLASHQLA_FWD_BLOCK_V for this call
    only; returns (GdnForward, the CUDA kernels that ran)."""
    monkeypatch.setenv("FLASHQLA_TRAIN_NOPREP", "1" if train_noprep else "0")
    monkeypatch.setenv("FLASHQLA_FWD_BLOCK_V", block_v)
    out = {}
    names = kernels_of(lambda: out.__setitem__("fwd", flashqla.chunk_gated_delta_rule_fwd(
        p["q"], p["k"], p["v"], p["g"], p["beta"], initial_state=p["initial_state"], output_final_state=True,
        cu_seqlens=cu, state_v_first=state_v_first, cp_segment_chunks=cp_segment_chunks,
        output_chunk_states=chunk_states)))
    monkeypatch.delenv("FLASHQLA_TRAIN_NOPREP")
    monkeypatch.delenv("FLASHQLA_FWD_BLOCK_V")
    return out["fwd"], names


def ran(names: list[str], kernel: str) -> bool:
    """kernel (e.g. "gdn_chunk_prep_a") among the names; flashqla's kernels are named flashqla_<kernel>_sm..."""
    return any(f"flashqla_{kernel}_sm" in n for n in names)


@needs_train_noprep
@pytest.mark.parametrize("state_v_first", [False, True], ids=["KV", "VK"])
@pytest.mark.parametrize("case", list(CASES))
def test_train_noprep_matches_reference_and_default(case, state_v_first, monkeypatch):
    H, HV, lengths, tail, dtype, gate = CASES[case]
    cu = ragged_cu_seqlens(lengths, DEV)
    p = make_problem(1, sum(lengths) + tail, H, HV, dtype=dtype, device=DEV, N=len(lengths), gate=gate,
                     state_v_first=state_v_first)
    o_ref, ht_ref = forward_reference(p, cu, lengths, state_v_first)
    outs = {}
    for train_noprep in (True, False):
        out, names = forward(p, cu, monkeypatch, train_noprep, state_v_first)
        assert ran(names, "gdn_chunk_prep_a") == train_noprep, names
        assert ran(names, "gdn_fwd_noprep") == train_noprep, names
        assert ran(names, "gdn_chunk_prep") != train_noprep, names
        check_packed_forward(out, o_ref, ht_ref, p["initial_state"], lengths,
                             f"{case} train_noprep={train_noprep} v_first={state_v_first}")
        outs[train_noprep] = out
    assert rel_err(outs[True].o, outs[False].o.double()) <= TOL_PATHS
    assert rel_err(outs[True].final_state, outs[False].final_state.double()) <= TOL_PATHS
    # what the backward reads: the same program's bits (the padding tail's rows are zeros in both)
    assert torch.equal(outs[True].g_cumsum, outs[False].g_cumsum)
    assert torch.equal(outs[True].A, outs[False].A)


@needs_train_noprep
@pytest.mark.parametrize("gate", ["strong", "mild"])
def test_train_noprep_with_context_parallelism(gate, monkeypatch):
    """Forced short segments: the prep-free kernel's warm-up pass and the correction walk inside gdn_fwd."""
    lengths = [3000, 1, 0, 700, 64]
    cu = ragged_cu_seqlens(lengths, DEV)
    p = make_problem(1, sum(lengths) + 9, 4, 4, device=DEV, N=len(lengths), gate=gate)
    o_ref, ht_ref = forward_reference(p, cu, lengths)
    out, names = forward(p, cu, monkeypatch, True, cp_segment_chunks=3)
    assert ran(names, "gdn_fwd_noprep") and ran(names, "gdn_cp_correct"), names
    check_packed_forward(out, o_ref, ht_ref, p["initial_state"], lengths, f"train_noprep cp=3 gate={gate}")


@needs_train_noprep
@pytest.mark.parametrize("what", ["bv64", "chunk_states"])
def test_train_noprep_falls_back(what, monkeypatch):
    """At the 64-wide slice, or with the chunk states asked for, the setting keeps the whole prep and the fused
    forward (and stays correct)."""
    lengths = [1000, 1, 333]
    cu = ragged_cu_seqlens(lengths, DEV)
    p = make_problem(1, sum(lengths) + 20, 4, 16, device=DEV, N=len(lengths))
    o_ref, ht_ref = forward_reference(p, cu, lengths)
    out, names = forward(p, cu, monkeypatch, True, block_v="64" if what == "bv64" else "128",
                         chunk_states=what == "chunk_states")
    assert not ran(names, "gdn_chunk_prep_a") and not ran(names, "gdn_fwd_noprep"), (what, names)
    assert ran(names, "gdn_chunk_prep"), (what, names)
    check_packed_forward(out, o_ref, ht_ref, p["initial_state"], lengths, f"train_noprep fallback {what}")


@needs_train_noprep
@pytest.mark.parametrize("H, HV", [(4, 4), (4, 16)], ids=["group 1", "group 4"])
def test_train_noprep_training_step(H, HV, monkeypatch):
    """A training step through autograd with FLASHQLA_TRAIN_NOPREP=1 (the fused backward at one v-head per qk-head,
    the two passes in groups): every gradient against the float64 chunked backward."""
    lengths = [1000, 1, 333, 64]
    cu = ragged_cu_seqlens(lengths, DEV)
    p = make_problem(1, sum(lengths) + 20, H, HV, device=DEV, N=len(lengths))
    names = ("q", "k", "v", "g", "beta", "initial_state")
    leaves = {n: p[n].clone().requires_grad_(True) for n in names}
    monkeypatch.setenv("FLASHQLA_TRAIN_NOPREP", "1")
    monkeypatch.setenv("FLASHQLA_FWD_BLOCK_V", "128")
    out = {}
    kernels = kernels_of(lambda: out.__setitem__("o_ht", flashqla.chunk_gated_delta_rule(
        **leaves, output_final_state=True, cu_seqlens=cu)))
    assert ran(kernels, "gdn_chunk_prep_a") and ran(kernels, "gdn_fwd_noprep"), kernels
    o, ht = out["o_ht"]
    check_training_gradients(p, cu, leaves, o, ht, f"train_noprep H={H} HV={HV} autograd")


@needs_train_noprep
def test_train_noprep_setting_is_checked(monkeypatch):
    p = make_problem(1, 64, 2, 2, device=DEV)
    cu = ragged_cu_seqlens([64], DEV)
    monkeypatch.setenv("FLASHQLA_TRAIN_NOPREP", "yes")
    with pytest.raises(RuntimeError, match="FLASHQLA_TRAIN_NOPREP must be 0 or 1"):
        flashqla.chunk_gated_delta_rule_fwd(p["q"], p["k"], p["v"], p["g"], p["beta"], cu_seqlens=cu)
