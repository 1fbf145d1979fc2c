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

import flashqla
from flashqla.reference import gdn_chunk_ref
from gdn_inputs import TOL, backward_case, kernels_of, make_problem, needs_sm90_kernel, ragged_cu_seqlens, record, \
    rel_err
from test_walk_split_gpu import CASES, GRAD_NAMES, outputs

pytestmark = [pytest.mark.gpu, needs_sm90_kernel("the correction's scan on split A")]
DEV = "cuda"
SPLIT = {"FLASHQLA_CP_SCAN": "1"}
PLAIN = {"FLASHQLA_CP_SCAN": "1", "FLASHQLA_WALK_SPLIT_M": "0"}


@pytest.mark.parametrize("state_v_first", [False, True], ids=["KV", "VK"])
@pytest.mark.parametrize("case", list(CASES))
def test_split_scan_gives_the_plain_scans_bits(case, state_v_first, monkeypatch):
    H, HV, lengths, tail = CASES[case]
    N, T = len(lengths), sum(lengths) + tail
    cu = ragged_cu_seqlens(lengths, DEV)
    p = make_problem(1, T, H, HV, device=DEV, gate="strong", N=N)
    fwd, do, dht, scale, ref = backward_case(p, cu, state_v_first)
    split = outputs(p, cu, lengths, state_v_first, (fwd, do, dht, scale), monkeypatch, SPLIT)
    plain = outputs(p, cu, lengths, state_v_first, (fwd, do, dht, scale), monkeypatch, PLAIN)
    what = f"scan split {case} v_first={state_v_first}"
    if not state_v_first:  # the forward's reference is in the [K, V] layout
        o_ref, ht_ref = gdn_chunk_ref(p["q"], p["k"], p["v"], p["g"], p["beta"], initial_state=p["initial_state"],
                                      output_final_state=True, cu_seqlens=cu)
        assert record("o", rel_err(split["o"], o_ref), what) <= TOL["o"], what
        assert record("final_state", rel_err(split["final_state"], ht_ref), what) <= TOL["final_state"], what
    for name, want in zip(GRAD_NAMES, ref):
        assert record(name, rel_err(split[name], want), what) <= TOL["grad"], f"{what}: {name}"
    for name, value in split.items():
        assert torch.equal(value, plain[name]), f"{what}: the split scan's {name} differs from the plain scan's"


def test_split_scan_runs_only_where_asked(monkeypatch):
    """The split scan's kernel runs with FLASHQLA_CP_SCAN=1 (split transitions by default, or asked), the plain scan's
    with FLASHQLA_WALK_SPLIT_M=0, and no scan without FLASHQLA_CP_SCAN=1 (profiler)."""
    p = make_problem(1, 4096, 2, 8, device=DEV, gate="strong")
    for env, want in ((SPLIT, "split"), ({**SPLIT, "FLASHQLA_WALK_SPLIT_M": "1"}, "split"), (PLAIN, "plain"),
                      ({}, None)):
        for name in ("FLASHQLA_WALK_SPLIT_M", "FLASHQLA_CP_SCAN"):
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        names = kernels_of(lambda: flashqla.chunk_gated_delta_rule_fwd(
            p["q"], p["k"], p["v"], p["g"], p["beta"], initial_state=p["initial_state"], output_final_state=True,
            cp_segment_chunks=2))
        scans = {("split" if "split_m1" in n else "plain") for n in names if "gdn_cp_scan" in n}
        assert scans == ({want} if want else set()), f"{env}: scans run {scans}, expected {want} ({sorted(names)})"
