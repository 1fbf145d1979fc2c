"""Context parallelism's start states by the log-depth scan (FLASHQLA_CP_SCAN=1, tilelang_src/sm90/cp_scan.py)
against the walk (cp_correct.py, the default) and against float64: the forward's o and final state and every
gradient of the backward (whose end-of-segment gradients the scan forms in reverse), with segments forced short so
that a sequence has many (rounds of offset 1 to 32 at the longest sequence here), ragged sequences with an empty one
and a padding tail, heads without decay (the exact fallback, whose maps compose) beside decaying ones, with and
without initial state / final-state gradient, both state layouts. The scan and the walk add the same fp32 products in
another order: they agree to the rounding of each against float64 (test_cp_gpu.py's TOL_CP_VS_NOCP)."""

from __future__ import annotations

import pytest
import torch

import flashqla
from flashqla.reference import gdn_chunk_ref
from gdn_inputs import (TOL, backward_case, kernels_of, make_problem, needs_sm90_kernel, ragged_cu_seqlens, record,
                        rel_err)
from test_cp_gpu import GRAD_NAMES, TOL_CP_VS_NOCP

pytestmark = [pytest.mark.gpu, needs_sm90_kernel("the correction's scan")]
DEV = "cuda"

CASES = {  # (H, HV, lengths, padding tail, forced segment chunks)
    "1x8192 H2/HV8 L2": (2, 8, [8192], 0, 2),  # 64 segments: 63 maps, six rounds
    "ragged H2/HV4 L1": (2, 4, [3000, 1, 0, 700, 64, 2100], 90, 1),
    "two H4/HV8 L3": (4, 8, [2500, 1500], 0, 3),
}


def forward(p, cu, cp, state_v_first=False, h0=True):
    return flashqla.chunk_gated_delta_rule_fwd(
        p["q"], p["k"], p["v"], p["g"], p["beta"], initial_state=p["initial_state"] if h0 else None,
        output_final_state=True, cu_seqlens=cu, state_v_first=state_v_first, cp_segment_chunks=cp)


@pytest.mark.parametrize("h0", [True, False], ids=["h0", "no-h0"])
@pytest.mark.parametrize("state_v_first", [False, True], ids=["KV", "VK"])
@pytest.mark.parametrize("case", list(CASES))
def test_scan_forward_matches_walk_and_reference(case, state_v_first, h0, monkeypatch):
    H, HV, lengths, tail, seg = CASES[case]
    T = sum(lengths) + tail
    cu = ragged_cu_seqlens(lengths, DEV)
    p = make_problem(1, T, H, HV, device=DEV, gate="strong", N=len(lengths))  # a quarter of the heads at g = 0
    monkeypatch.setenv("FLASHQLA_CP_SCAN", "0")
    walk = forward(p, cu, seg, state_v_first, h0)
    monkeypatch.setenv("FLASHQLA_CP_SCAN", "1")
    scan = forward(p, cu, seg, state_v_first, h0)
    o_ref, ht_ref = gdn_chunk_ref(p["q"], p["k"], p["v"], p["g"], p["beta"],
                                  initial_state=p["initial_state"] if h0 else None, output_final_state=True,
                                  cu_seqlens=cu, state_v_first=state_v_first)
    what = f"scan fwd {case} v_first={state_v_first} h0={h0}"
    assert record("o", rel_err(scan.o, o_ref), what) <= TOL["o"], what
    assert record("final_state", rel_err(scan.final_state, ht_ref), what) <= TOL["final_state"], what
    assert rel_err(scan.o, walk.o.double()) <= TOL_CP_VS_NOCP, what
    assert rel_err(scan.final_state, walk.final_state.double()) <= TOL_CP_VS_NOCP, what
    if tail:
        assert torch.all(scan.o[0, sum(lengths):] == 0), f"{what}: padding tail not zero"


@pytest.mark.parametrize("states", [True, False], ids=["h0-dht", "none"])
@pytest.mark.parametrize("state_v_first", [False, True], ids=["KV", "VK"])
@pytest.mark.parametrize("case", list(CASES))
def test_scan_backward_matches_walk_and_reference(case, state_v_first, states, monkeypatch):
    """The backward's two scans: the recompute's start states (forward) and the state gradient's end-of-segment
    gradients (reverse, from dht)."""
    H, HV, lengths, tail, seg = CASES[case]
    N, T = len(lengths), sum(lengths) + tail
    cu = ragged_cu_seqlens(lengths, DEV)
    p = make_problem(1, T, H, HV, device=DEV, gate="strong", N=N)
    h0 = p["initial_state"] if states else None
    fwd, do, dht, scale, ref = backward_case(p, cu, state_v_first, states)
    got = {}
    for setting in ("0", "1"):
        monkeypatch.setenv("FLASHQLA_CP_SCAN", setting)
        got[setting] = flashqla.chunk_gated_delta_rule_bwd(
            p["q"], p["k"], p["v"], fwd.g_cumsum, p["beta"], fwd.A, do, dht, scale=scale, initial_state=h0,
            cu_seqlens=cu, state_v_first=state_v_first, cp_segment_chunks=seg)
    what = f"scan bwd {case} v_first={state_v_first} states={states}"
    for name, want in zip(GRAD_NAMES, ref):
        if want is None:
            continue
        scan, walk = getattr(got["1"], name), getattr(got["0"], name)
        assert record(name, rel_err(scan, want), what) <= TOL["grad"], f"{what}: {name}"
        assert rel_err(scan, walk.double()) <= TOL_CP_VS_NOCP, f"{what}: {name} scan against walk"


def test_the_scan_runs_instead_of_the_walk(monkeypatch):
    p = make_problem(1, 4096, 2, 8, device=DEV, gate="strong")
    for setting, runs, absent in (("1", "gdn_cp_scan", "gdn_cp_correct"), ("0", "gdn_cp_correct", "gdn_cp_scan")):
        monkeypatch.setenv("FLASHQLA_CP_SCAN", setting)
        names = kernels_of(lambda: forward(p, None, 2))
        assert any(runs in n for n in names), (setting, names)
        assert not any(absent in n for n in names), (setting, names)


def test_scan_setting_is_checked(monkeypatch):
    monkeypatch.setenv("FLASHQLA_CP_SCAN", "yes")
    p = make_problem(1, 4096, 2, 8, device=DEV, gate="strong")
    with pytest.raises(RuntimeError, match="FLASHQLA_CP_SCAN must be 0 or 1"):
        forward(p, None, 2)
