"""The correction walk that loads the transition matrices already split (the default; FLASHQLA_WALK_SPLIT_M=0 runs the
plain walk that splits M at every step): the warm-up passes
store each fallback segment's transition as bf16 high and low parts in the halves of its fp32 slot (warmup = 2,
tilelang_src/common/bf16_split.py split_slots), and the 32-wide walk's split_m variant (tilelang_src/sm90/cp_correct.py)
loads them by TMA instead of splitting M at every step. The split is the same rounding of the same fp32 values, so every
result must equal the plain walk's bit for bit: the forward by the chunk prep's path and by the prep-free prefill, the
backward, both state layouts, with CP forced on and the 'strong' gate (a quarter of the heads at g = 0: the fallback,
where the transitions are used); and the plain 64-wide walk (FLASHQLA_WALK_BV=64 FLASHQLA_WALK_SPLIT_M=0), whose
warm-up stores fp32, against float64. The 64-wide walk on split transitions is another kernel (S^T in registers,
test_walk_rs_gpu.py), the scan's split variant too (test_cp_scan_split_gpu.py)."""

from __future__ import annotations

import pytest
import torch

import flashqla
from flashqla.reference import gdn_chunk_ref
from gdn_inputs import TOL, backward_case, kernels_of, make_problem, needs_sm90_kernel, ragged_cu_seqlens, record, \
    rel_err

pytestmark = [pytest.mark.gpu, needs_sm90_kernel("the split walk (and the prep-free prefill)")]
DEV = "cuda"
GRAD_NAMES = ("dq", "dk", "dv", "dg", "dbeta", "dh0")
CASES = {
    "1x4096 H2/HV8": (2, 8, [4096], 0),
    "ragged H2/HV8": (2, 8, [3000, 1, 0, 700, 64, 5000], 90),
}
# the settings compared, each against the one it must equal bit for bit
SETTINGS = {
    "plain": {"FLASHQLA_WALK_SPLIT_M": "0"},
    "split": {},
    "split asked": {"FLASHQLA_WALK_SPLIT_M": "1"},
    "w64": {"FLASHQLA_WALK_BV": "64", "FLASHQLA_WALK_SPLIT_M": "0"},
}
SAME_AS = {"split": "plain", "split asked": "split"}


def use_settings(monkeypatch, env):
    """The correction's environment settings exactly as env names them (the others unset)."""
    for name in ("FLASHQLA_WALK_SPLIT_M", "FLASHQLA_WALK_BV", "FLASHQLA_CP_SCAN"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)


def outputs(p, cu, lengths, state_v_first, bwd_inputs, monkeypatch, env):
    """The prep path's forward (o, final_state), the prep-free prefill's (BV = 128) and the backward's gradients with
    CP forced on (2 chunks per segment), under the environment settings env."""
    use_settings(monkeypatch, env)
    out = {}
    if not state_v_first:
        fwd = flashqla.chunk_gated_delta_rule_fwd(
            p["q"], p["k"], p["v"], p["g"], p["beta"], initial_state=p["initial_state"], output_final_state=True,
            cu_seqlens=cu, cp_segment_chunks=2)
        out["o"], out["final_state"] = fwd.o, fwd.final_state
    monkeypatch.setenv("FLASHQLA_FWD_NOPREP", "1")
    monkeypatch.setenv("FLASHQLA_FWD_BLOCK_V", "128")
    out["prefill o"], out["prefill final_state"] = torch.ops.flashqla.gdn_prefill(
        p["q"], p["k"], p["v"], p["g"].float(), p["beta"].float(), 128 ** -0.5, p["initial_state"], cu, True,
        state_v_first, 2, max(lengths))
    monkeypatch.delenv("FLASHQLA_FWD_NOPREP")
    monkeypatch.delenv("FLASHQLA_FWD_BLOCK_V")
    fwd_saved, do, dht, scale = bwd_inputs
    got = flashqla.chunk_gated_delta_rule_bwd(
        p["q"], p["k"], p["v"], fwd_saved.g_cumsum, p["beta"], fwd_saved.A, do, dht, scale=scale,
        initial_state=p["initial_state"], cu_seqlens=cu, state_v_first=state_v_first, cp_segment_chunks=2)
    for name in GRAD_NAMES:
        out[name] = getattr(got, name)
    torch.cuda.synchronize()
    return out


def case_runs(case, state_v_first, monkeypatch, settings):
    """CASES[case]'s inputs, its outputs() under each of settings ({label: env}), and the float64 gradients:
    (runs {label: outputs}, p, cu, ref)."""
    H, HV, lengths, tail = CASES[case]
    N, T = len(lengths), sum(lengths) + tail
    cu = ragged_cu_seqlens(lengths, DEV)
    p = make_problem(1, T, H, HV, device=DEV, gate="strong", N=N)
    fwd, do, dht, scale, ref = backward_case(p, cu, state_v_first)
    runs = {label: outputs(p, cu, lengths, state_v_first, (fwd, do, dht, scale), monkeypatch, env)
            for label, env in settings.items()}
    return runs, p, cu, ref


def check_against_reference(got, p, cu, ref, state_v_first, what):
    """One run's outputs against float64: o, final_state and the prefill's o (KV only: the forward's reference is in
    the [K, V] layout), and every gradient (ref, from backward_case)."""
    if not state_v_first:
        o_ref, ht_ref = gdn_chunk_ref(p["q"], p["k"], p["v"], p["g"], p["beta"], initial_state=p["initial_state"],
                                      output_final_state=True, cu_seqlens=cu)
        assert record("o", rel_err(got["o"], o_ref), what) <= TOL["o"], what
        assert record("final_state", rel_err(got["final_state"], ht_ref), what) <= TOL["final_state"], what
        assert rel_err(got["prefill o"].view_as(got["o"]), o_ref) <= TOL["o"], f"{what}: prefill o"
    for name, want in zip(GRAD_NAMES, ref):
        assert not torch.isnan(got[name]).any(), f"{what}: {name} has NaN"
        assert record(name, rel_err(got[name], want), what) <= TOL["grad"], f"{what}: {name}"


def correction_kernels(p, monkeypatch, env):
    """The kernels a CP forward (2-chunk segments, initial and final state) runs under the settings env (profiler)."""
    use_settings(monkeypatch, env)
    return kernels_of(lambda: flashqla.chunk_gated_delta_rule_fwd(
        p["q"], p["k"], p["v"], p["g"], p["beta"], initial_state=p["initial_state"], output_final_state=True,
        cp_segment_chunks=2))


@pytest.mark.parametrize("state_v_first", [False, True], ids=["KV", "VK"])
@pytest.mark.parametrize("case", list(CASES))
def test_split_transitions_give_the_plain_walks_bits(case, state_v_first, monkeypatch):
    runs, p, cu, ref = case_runs(case, state_v_first, monkeypatch, SETTINGS)
    # the split walk's and the plain 64-wide walk's results against float64
    for label in ("split", "w64"):
        check_against_reference(runs[label], p, cu, ref, state_v_first, f"walk {label} {case} v_first={state_v_first}")
    what = f"walk split_m {case} v_first={state_v_first}"
    for label, base in SAME_AS.items():
        for name, value in runs[label].items():
            assert torch.equal(value, runs[base][name]), f"{what}: {label}'s {name} differs from {base}'s"


def test_split_walk_runs_only_where_asked(monkeypatch):
    """The 32-wide split_m walk's kernel runs by default and with FLASHQLA_WALK_SPLIT_M=1, not with
    FLASHQLA_WALK_SPLIT_M=0, not at FLASHQLA_WALK_BV=64 (its own split walk: test_walk_rs_gpu.py) and not with the scan
    (profiler)."""
    p = make_problem(1, 4096, 2, 8, device=DEV, gate="strong")
    for env, runs in (({}, True), ({"FLASHQLA_WALK_SPLIT_M": "1"}, True), ({"FLASHQLA_WALK_SPLIT_M": "0"}, False),
                      ({"FLASHQLA_WALK_SPLIT_M": "1", "FLASHQLA_WALK_BV": "64"}, False),
                      ({"FLASHQLA_WALK_SPLIT_M": "1", "FLASHQLA_CP_SCAN": "1"}, False)):
        names = correction_kernels(p, monkeypatch, env)
        ran = any("gdn_cp_correct" in n and "bv32_split_m1" in n for n in names)
        assert ran == runs, f"{env}: the split walk ran: {ran}, expected {runs} ({sorted(names)})"


def test_split_setting_is_checked(monkeypatch):
    p = make_problem(1, 1000, 2, 8, device=DEV, gate="strong")
    monkeypatch.setenv("FLASHQLA_WALK_SPLIT_M", "yes")
    with pytest.raises(RuntimeError, match="FLASHQLA_WALK_SPLIT_M must be 0 or 1"):
        flashqla.chunk_gated_delta_rule_fwd(p["q"], p["k"], p["v"], p["g"], p["beta"], cp_segment_chunks=2)
