"""The 64-wide correction walk on split transitions with the state transposed in registers (FLASHQLA_WALK_BV=64, split
transitions by default; tilelang_src/sm90/cp_correct_rs.py): against float64 and against the default 32-wide split
walk, in the forward by the chunk prep's path and by the prep-free prefill and in the backward (the recompute's walk
and the state gradient's reverse one), both state layouts, CP forced to 2-chunk segments (31 steps in a 4096-token
sequence) with the 'strong' gate (a quarter of the heads at g = 0: the fallback, where the products run). Its three
products are the 32-wide walk's, added onto E instead of E plus their sum: the two agree to the rounding of each against
float64 (test_cp_gpu.py's TOL_CP_VS_NOCP, as the scan against the walk). Also: the kernel runs exactly where asked."""

from __future__ import annotations

import pytest

from gdn_inputs import make_problem, needs_sm90_kernel, rel_err
from test_cp_gpu import TOL_CP_VS_NOCP
from test_walk_split_gpu import CASES, case_runs, check_against_reference, correction_kernels

pytestmark = [pytest.mark.gpu, needs_sm90_kernel("the register walk")]
DEV = "cuda"
RS = {"FLASHQLA_WALK_BV": "64"}


@pytest.mark.parametrize("state_v_first", [False, True], ids=["KV", "VK"])
@pytest.mark.parametrize("case", list(CASES))
def test_register_walk_matches_the_split_walk_and_reference(case, state_v_first, monkeypatch):
    runs, p, cu, ref = case_runs(case, state_v_first, monkeypatch, {"rs": RS, "walk": {}})
    what = f"walk rs {case} v_first={state_v_first}"
    check_against_reference(runs["rs"], p, cu, ref, state_v_first, what)
    for name, value in runs["rs"].items():
        assert rel_err(value, runs["walk"][name].double()) <= TOL_CP_VS_NOCP, f"{what}: {name} against the 32-wide walk"


def test_register_walk_runs_only_where_asked(monkeypatch):
    """FLASHQLA_WALK_BV=64 runs the register walk (split transitions by default or asked), not with
    FLASHQLA_WALK_SPLIT_M=0 (the plain 64-wide walk), not by default (the 32-wide split walk) and not with the scan."""
    p = make_problem(1, 4096, 2, 8, device=DEV, gate="strong")
    for env, runs in ((RS, True), ({**RS, "FLASHQLA_WALK_SPLIT_M": "1"}, True),
                      ({**RS, "FLASHQLA_WALK_SPLIT_M": "0"}, False), ({}, False),
                      ({**RS, "FLASHQLA_CP_SCAN": "1"}, False)):
        names = correction_kernels(p, monkeypatch, env)
        ran = any("gdn_cp_correct" in n and "bv64_split_m1" in n for n in names)
        assert ran == runs, f"{env}: the register walk ran: {ran}, expected {runs} ({sorted(names)})"
