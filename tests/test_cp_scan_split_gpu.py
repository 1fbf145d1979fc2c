"""The correction's scan on A kept split (FLASHQLA_CP_SCAN=1 with split transitions, the default of
FLASHQLA_WALK_SPLIT_M; tilelang_src/sm90/cp_scan_split.py) against the plain scan (FLASHQLA_WALK_SPLIT_M=0,
cp_scan.py): the warm-up passes store the transitions split, every round stores its products A_p A_q split, and the
kernel loads its operands by TMA. The split is the same rounding of the same fp32 values and the products run in the
same order, so every result must equal the plain scan's bit for bit: the forward by the chunk prep's path and by the
prep-free prefill, the backward (its recompute's scan and the state gradient's reverse one), both state layouts,
with CP forced to 2-chunk segments (31 maps in a 4096-token sequence: five rounds) and the 'strong' gate (a quarter
of the heads at g = 0: the fallback, whose maps compose). Against float64 as every scan is (tests/test_cp_scan_gpu.py
runs its cases on this kernel too, now the default with the scan)."""

from __future__ import annotations

import pytest
import torch

from gdn_inputs import make_problem, needs_sm90_kernel
from test_walk_split_gpu import CASES, case_runs, check_against_reference, correction_kernels

pytestmark = [pytest.mark.gpu, needs_sm90_kernel("the correction's scan on split A")]
DEV = "cuda"
SPLIT = {"FLASHQLA_CP_SCAN": "1"}
PLAIN = {"FLASHQLA_CP_SCAN": "1", "FLASHQLA_WALK_SPLIT_M": "0"}


@pytest.mark.parametrize("state_v_first", [False, True], ids=["KV", "VK"])
@pytest.mark.parametrize("case", list(CASES))
def test_split_scan_gives_the_plain_scans_bits(case, state_v_first, monkeypatch):
    runs, p, cu, ref = case_runs(case, state_v_first, monkeypatch, {"split": SPLIT, "plain": PLAIN})
    what = f"scan split {case} v_first={state_v_first}"
    check_against_reference(runs["split"], p, cu, ref, state_v_first, what)
    for name, value in runs["split"].items():
        assert torch.equal(value, runs["plain"][name]), f"{what}: the split scan's {name} differs from the plain scan's"


def test_split_scan_runs_only_where_asked(monkeypatch):
    """The split scan's kernel runs with FLASHQLA_CP_SCAN=1 (split transitions by default, or asked), the plain scan's
    with FLASHQLA_WALK_SPLIT_M=0, and no scan without FLASHQLA_CP_SCAN=1 (profiler)."""
    p = make_problem(1, 4096, 2, 8, device=DEV, gate="strong")
    for env, want in ((SPLIT, "split"), ({**SPLIT, "FLASHQLA_WALK_SPLIT_M": "1"}, "split"), (PLAIN, "plain"),
                      ({}, None)):
        names = correction_kernels(p, monkeypatch, env)
        scans = {("split" if "split_m1" in n else "plain") for n in names if "gdn_cp_scan" in n}
        assert scans == ({want} if want else set()), f"{env}: scans run {scans}, expected {want} ({sorted(names)})"
