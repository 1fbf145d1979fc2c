"""Intra-card context parallelism (CP) on the GPU: sequences split into segments whose start
states (forward) or end-state gradients (backward) come from a warm-up pass (heads whose decay
reaches the threshold) or from the exact transition-matrix fallback (heads without decay).

Every case runs with CP forced on (short segments, so that a sequence has many), forced off,
and automatic, and checks each against the float64 reference, and CP against no CP.
Gates: 'strong' mixes heads with decay rates up to 16 with a quarter of heads at g = 0 (the
fallback), 'mild' (logsigmoid(randn) / 16, the benchmark's gate) needs several chunks of warm-up.
"""

from __future__ import annotations

import pytest
import torch

import flashqla
from flashqla.reference import chunk_bwd_ref, gdn_chunk_ref
from gdn_inputs import TOL, backward_case, make_problem, ragged_cu_seqlens, record, rel_err

pytestmark = pytest.mark.gpu
DEV = "cuda"
# CP and no CP round differently (other start states of the bf16 snapshots), never by more than
# the rounding of each against float64
TOL_CP_VS_NOCP = 1e-2

CASES = {
    "1x4096 H2/HV8": (2, 8, [4096], 0),
    "1x16384 H4/HV4": (4, 4, [16384], 0),
    "ragged H2/HV8": (2, 8, [3000, 1, 0, 700, 64, 5000], 90),
    "two H16/HV32": (16, 32, [2500, 1500], 0),
}


def run(p, cu, cp_segment_chunks):
    return flashqla.chunk_gated_delta_rule_fwd(
        p["q"], p["k"], p["v"], p["g"], p["beta"], initial_state=p["initial_state"], output_final_state=True,
        cu_seqlens=cu, cp_segment_chunks=cp_segment_chunks)


@pytest.mark.parametrize("gate", ["strong", "mild"])
@pytest.mark.parametrize("case", list(CASES))
def test_cp_matches_reference_and_no_cp(case, gate):
    H, HV, lengths, tail = CASES[case]
    T = sum(lengths) + tail
    cu = ragged_cu_seqlens(lengths, DEV)
    p = make_problem(1, T, H, HV, device=DEV, gate=gate, N=len(lengths))
    o_ref, ht_ref = gdn_chunk_ref(p["q"], p["k"], p["v"], p["g"], p["beta"], initial_state=p["initial_state"],
                                  output_final_state=True, cu_seqlens=cu)
    results = {}
    for cp in (0, 1, 3, 8, -1):
        out = run(p, cu, cp)
        what = f"{case} gate={gate} cp_segment_chunks={cp}"
        e_o = record("o", rel_err(out.o, o_ref), what)
        e_h = record("final_state", rel_err(out.final_state, ht_ref), what)
        assert e_o <= TOL["o"], f"{what}: o rel err {e_o:.3e}"
        assert e_h <= TOL["final_state"], f"{what}: final_state rel err {e_h:.3e}"
        if tail:
            assert torch.all(out.o[0, sum(lengths):] == 0), f"{what}: padding tail not zero"
        results[cp] = out
    for cp in (1, 3, 8, -1):
        assert rel_err(results[cp].o, results[0].o.double()) <= TOL_CP_VS_NOCP
        assert rel_err(results[cp].final_state, results[0].final_state.double()) <= TOL_CP_VS_NOCP


def test_cp_without_initial_state_and_final_state():
    p = make_problem(1, 5000, 2, 8, device=DEV, gate="strong", h0=False)
    o_ref, _ = gdn_chunk_ref(p["q"], p["k"], p["v"], p["g"], p["beta"], output_final_state=False)
    out = flashqla.chunk_gated_delta_rule_fwd(p["q"], p["k"], p["v"], p["g"], p["beta"], output_final_state=False,
                                              cp_segment_chunks=2)
    assert out.final_state is None
    assert rel_err(out.o, o_ref) <= TOL["o"]


GRAD_NAMES = ("dq", "dk", "dv", "dg", "dbeta", "dh0")


@pytest.mark.parametrize("state_v_first", [False, True], ids=["KV", "VK"])
@pytest.mark.parametrize("gate", ["strong", "mild"])
@pytest.mark.parametrize("case", [c for c in CASES if c != "1x16384 H4/HV4"])
def test_cp_backward_matches_reference_and_no_cp(case, gate, state_v_first):
    """The backward's state-gradient recurrence (and its state recompute) by segments: every gradient
    against the float64 chunked backward, and CP against no CP."""
    H, HV, lengths, tail = CASES[case]
    N, T = len(lengths), sum(lengths) + tail
    cu = ragged_cu_seqlens(lengths, DEV)
    p = make_problem(1, T, H, HV, device=DEV, gate=gate, N=N)  # random states: either layout
    fwd, do, dht, scale, ref = backward_case(p, cu, state_v_first)
    grads = {}
    for cp in (0, 1, 3, -1):
        got = flashqla.chunk_gated_delta_rule_bwd(
            p["q"], p["k"], p["v"], fwd.g_cumsum, p["beta"], fwd.A, do, dht, scale=scale,
            initial_state=p["initial_state"], cu_seqlens=cu, state_v_first=state_v_first, cp_segment_chunks=cp)
        what = f"bwd {case} gate={gate} v_first={state_v_first} cp_segment_chunks={cp}"
        for name, want in zip(GRAD_NAMES, ref):
            err = record(name, rel_err(getattr(got, name), want), what)
            assert err <= TOL["grad"], f"{what}: {name} rel err {err:.3e}"
        grads[cp] = got
    for cp in (1, 3, -1):
        for name in GRAD_NAMES:
            a, b = getattr(grads[cp], name), getattr(grads[0], name)
            assert rel_err(a, b.double()) <= TOL_CP_VS_NOCP, f"cp_segment_chunks={cp}: {name}"


def test_cp_backward_without_states():
    """No initial state and no final-state gradient: the last segment starts from zero, no dh0."""
    p = make_problem(1, 5000, 2, 8, device=DEV, gate="strong", h0=False)
    fwd = run(p, None, 0)
    do = torch.randn_like(p["v"])
    ref = chunk_bwd_ref(p["q"], p["k"], p["v"], fwd.g_cumsum, p["beta"], do.to(p["v"].dtype), None, 128 ** -0.5)
    for cp in (0, 2):
        got = flashqla.chunk_gated_delta_rule_bwd(p["q"], p["k"], p["v"], fwd.g_cumsum, p["beta"], fwd.A, do,
                                                  None, cp_segment_chunks=cp)
        assert got.dh0 is None
        for name, want in zip(GRAD_NAMES[:5], ref[:5]):
            assert rel_err(getattr(got, name), want) <= TOL["grad"], f"cp_segment_chunks={cp}: {name}"


def test_auto_cp_flag_reaches_the_kernels():
    """auto_cp=False and True both agree with the reference on a shape where CP is chosen."""
    p = make_problem(1, 8192, 2, 8, device=DEV, gate="mild")
    o_ref, ht_ref = gdn_chunk_ref(p["q"], p["k"], p["v"], p["g"], p["beta"], initial_state=p["initial_state"],
                                  output_final_state=True)
    for auto_cp in (False, True):
        o, ht = flashqla.chunk_gated_delta_rule(**p, output_final_state=True, auto_cp=auto_cp)
        assert rel_err(o, o_ref) <= TOL["o"] and rel_err(ht, ht_ref) <= TOL["final_state"]


@pytest.mark.parametrize("bad", [-2, 1 << 25, 1.5, True])
def test_cp_segment_chunks_is_checked(bad):
    p = make_problem(1, 64, 2, 8, device=DEV)
    with pytest.raises((ValueError, TypeError), match="cp_segment_chunks"):
        run(p, None, bad)


@pytest.mark.parametrize("gate", ["strong", "mild"])
def test_max_seqlen_hint_changes_no_result(gate):
    """max_seqlen steers the plans only (segment length, V width): the true longest length, none, a wrong one
    (too short) and T all give the reference's outputs and gradients, forward and backward."""
    lengths = [5000, 300, 700]
    N, T = len(lengths), sum(lengths)
    cu = ragged_cu_seqlens(lengths, DEV)
    p = make_problem(1, T, 2, 8, device=DEV, gate=gate, N=N)
    scale = 128 ** -0.5
    o_ref, ht_ref = gdn_chunk_ref(p["q"], p["k"], p["v"], p["g"], p["beta"], initial_state=p["initial_state"],
                                  output_final_state=True, cu_seqlens=cu)
    do = torch.randn_like(p["v"])
    dht = torch.randn(N, 8, 128, 128, device=DEV) / 8
    for hint in (0, max(lengths), 64, T):
        what = f"gate={gate} max_seqlen={hint}"
        o, ht, gc, A, _ = torch.ops.flashqla.gdn_fwd(p["q"], p["k"], p["v"], p["g"], p["beta"], scale,
                                                     p["initial_state"], cu, True, False, -1, False, hint)
        assert rel_err(o, o_ref) <= TOL["o"], f"{what}: o"
        assert rel_err(ht, ht_ref) <= TOL["final_state"], f"{what}: final_state"
        ref = chunk_bwd_ref(p["q"], p["k"], p["v"], gc, p["beta"], do, dht, scale, p["initial_state"], cu, False)
        got = torch.ops.flashqla.gdn_bwd(p["q"], p["k"], p["v"], gc, p["beta"], A, do, dht, scale,
                                         p["initial_state"], cu, False, -1, None, hint)
        for name, g_got, want in zip(GRAD_NAMES, got, ref):
            assert rel_err(g_got, want) <= TOL["grad"], f"{what}: {name}"


@pytest.mark.parametrize("state_v_first", [False, True], ids=["KV", "VK"])
@pytest.mark.parametrize("case", ["1x4096 H2/HV8", "ragged H2/HV8"])
def test_walk_of_32_wide_slices_matches_reference_and_64(case, state_v_first, monkeypatch):
    """FLASHQLA_WALK_BV=32 (the correction walk's 32-wide V slices, sm90 builds, the default) and 64: forward and
    backward with CP forced on, against float64 and against the 64-wide walk (the same products per element, so equal
    to fp32 rounding; the bound 1e-6 is far below a bf16 step, 4e-3, so a wrong column block fails it). The plain
    walks (FLASHQLA_WALK_SPLIT_M=0): at 64 the split transitions run the register walk, whose products add in another
    order (test_walk_rs_gpu.py)."""
    monkeypatch.setenv("FLASHQLA_WALK_SPLIT_M", "0")
    H, HV, lengths, tail = CASES[case]
    N, T = len(lengths), sum(lengths) + tail
    cu = ragged_cu_seqlens(lengths, DEV)
    p = make_problem(1, T, H, HV, device=DEV, gate="strong", N=N)
    fwd, do, dht, scale, ref = backward_case(p, cu, state_v_first)
    o_ref, ht_ref = gdn_chunk_ref(p["q"], p["k"], p["v"], p["g"], p["beta"], initial_state=p["initial_state"],
                                  output_final_state=True, cu_seqlens=cu)
    out = {}
    for bv in ("64", "32"):
        monkeypatch.setenv("FLASHQLA_WALK_BV", bv)
        o = run(p, cu, 2) if not state_v_first else None
        g = flashqla.chunk_gated_delta_rule_bwd(
            p["q"], p["k"], p["v"], fwd.g_cumsum, p["beta"], fwd.A, do, dht, scale=scale,
            initial_state=p["initial_state"], cu_seqlens=cu, state_v_first=state_v_first, cp_segment_chunks=2)
        out[bv] = (o, g)
    what = f"walk BV=32 {case} v_first={state_v_first}"
    o32, g32 = out["32"]
    o64, g64 = out["64"]
    if o32 is not None:
        assert record("o", rel_err(o32.o, o_ref), what) <= TOL["o"], what
        assert record("final_state", rel_err(o32.final_state, ht_ref), what) <= TOL["final_state"], what
        assert rel_err(o32.o, o64.o.double()) <= 1e-6, f"{what}: o differs from the 64-wide walk's"
        assert rel_err(o32.final_state, o64.final_state.double()) <= 1e-6, f"{what}: final_state"
    for name, want in zip(GRAD_NAMES, ref):
        a, b = getattr(g32, name), getattr(g64, name)
        assert not torch.isnan(a).any(), f"{what}: {name} has NaN"
        assert record(name, rel_err(a, want), what) <= TOL["grad"], f"{what}: {name}"
        assert rel_err(a, b.double()) <= 1e-6, f"{what}: {name} differs from the 64-wide walk's"


def test_walk_width_other_than_32_or_64_is_rejected(monkeypatch):
    p = make_problem(1, 1000, 2, 8, device=DEV, gate="strong")
    monkeypatch.setenv("FLASHQLA_WALK_BV", "16")
    with pytest.raises(RuntimeError, match="FLASHQLA_WALK_BV must be 32 or 64"):
        run(p, None, 2)
