"""Huge shapes on the SM90 kernels (GPU only; marked gpu and edge): a 1,048,576-token sequence forward and
backward, and tensors of more than 2^31 elements (64-bit offsets) forward (v and o: 1M tokens x 64 v-heads
x 128 = 8.6e9 elements, A 4.3e9) and backward (1M x 20 x 128 = 2.7e9 in v, do, dv and the fp32 dq/dk
workspaces; 4.4e9 in the per-chunk states h and dh). About 40 s each and at most ~75 GB on an H200.

No float64 reference of a whole problem fits, so each check is one that still fails on a wrong offset,
state or write:
* chosen heads (the first and the last: the largest offsets) over every token against a float64 reference
  run on the GPU segment by segment (tests/long_reference.py);
* all heads: the last sequence run alone (small offsets) equals the big run bitwise;
* all heads: the padding tail is exactly 0 (outputs are NaN-poisoned before the kernels run, conftest);
* backward: the last 2048 tokens of the long sequence against the reference started from the reference
  state there; the first 2048 tokens and dh0 from a second backward whose loss stops at token 2048, where
  every later gradient must be exactly 0.
"""

from __future__ import annotations

import gc

import pytest
import torch

import flashqla
from flashqla.reference import chunk_bwd_ref, chunk_local_cumsum_ref, kkt_solve_ref
from gdn_inputs import TOL, record, rel_err
from long_reference import forward, head_group, huge_problem

pytestmark = [pytest.mark.gpu, pytest.mark.edge]
DEV = "cuda"
MILLION = 2**20
SCALE = 128**-0.5
WINDOW = 2048  # tokens checked against the float64 backward at each end of the long sequence
TOKENS = ("q", "k", "v", "g", "beta")


@pytest.fixture(autouse=True)
def _free_memory():
    yield
    gc.collect()
    torch.cuda.empty_cache()


def check(name: str, got: torch.Tensor, want: torch.Tensor, tol: float, what: str) -> None:
    err = record(name, rel_err(got, want), what)
    assert err <= tol, f"{what}: {name} rel err {err:.3e}"


def tokens(p: dict, a: int, b: int, v_heads=None) -> dict:
    """Tokens [a, b) of the per-token tensors (optionally only some v-heads of v, g, beta)."""
    out = {n: p[n][:, a:b] for n in TOKENS}
    if v_heads is not None:
        out.update({n: out[n][:, :, v_heads] for n in ("v", "g", "beta")})
    return out


def assert_zero(x: torch.Tensor, what: str) -> None:
    assert torch.equal(x, torch.zeros_like(x)), what


def test_million_token_sequence():
    T, HV = MILLION, 2
    p = huge_problem(T, 1, HV, N=1, device=DEV)
    what = f"T={T} H=1 HV={HV}"
    fwd = flashqla.chunk_gated_delta_rule_fwd(**p)
    s = T - WINDOW
    head, S_s = forward(p, 0, s, SCALE, p["initial_state"].double(), keep=("o", "g_cumsum", "A"))
    tail, S_T = forward(p, s, T, SCALE, S_s, keep=("o", "g_cumsum", "A"))
    for name in ("o", "g_cumsum", "A"):
        check(name, getattr(fwd, name), torch.cat([head[name], tail[name]], 1), TOL[name], what)
    check("final_state", fwd.final_state, S_T, TOL["final_state"], what)
    del head, tail

    do = torch.randn_like(fwd.o)
    dht = torch.randn_like(fwd.final_state) / 8
    grads = flashqla.chunk_gated_delta_rule_bwd(p["q"], p["k"], p["v"], fwd.g_cumsum, p["beta"], fwd.A, do, dht,
                                                initial_state=p["initial_state"])
    # the last WINDOW tokens: the float64 backward from the reference state at token s
    w = tokens(p, s, T)
    ref = chunk_bwd_ref(w["q"], w["k"], w["v"], chunk_local_cumsum_ref(w["g"]), w["beta"], do[:, s:], dht, SCALE, S_s)
    for name, r in zip(("dq", "dk", "dv", "dg", "dbeta"), ref):
        check(name, getattr(grads, name)[:, s:], r, TOL["grad"], what + " last tokens")
    # the first WINDOW tokens and dh0: a loss on o[:, :WINDOW] only
    do[:, WINDOW:] = 0
    grads = flashqla.chunk_gated_delta_rule_bwd(p["q"], p["k"], p["v"], fwd.g_cumsum, p["beta"], fwd.A, do, None,
                                                initial_state=p["initial_state"])
    w = tokens(p, 0, WINDOW)
    ref = chunk_bwd_ref(w["q"], w["k"], w["v"], chunk_local_cumsum_ref(w["g"]), w["beta"], do[:, :WINDOW], None,
                        SCALE, p["initial_state"])
    for name, r in zip(("dq", "dk", "dv", "dg", "dbeta", "dh0"), ref):
        got = getattr(grads, name)
        check(name, got if name == "dh0" else got[:, :WINDOW], r, TOL["grad"], what + " first tokens")
        if name != "dh0":
            assert_zero(got[:, WINDOW:], f"{name} after the loss window")


def test_int64_offsets_forward():
    T, H, HV, L2, TAIL = MILLION, 8, 64, 963, 37
    T1, end = T - L2 - TAIL, T - TAIL
    p = huge_problem(T, H, HV, N=2, device=DEV)
    assert p["v"].numel() == 2**33 and T * HV * 64 == 2**32  # elements of v and o, of A
    cu = torch.tensor([0, T1, end], dtype=torch.int32, device=DEV)
    what = f"T={T} H={H} HV={HV} (2^33 elements)"
    fwd = flashqla.chunk_gated_delta_rule_fwd(**p, cu_seqlens=cu)
    for name in ("o", "g_cumsum", "A"):
        assert_zero(getattr(fwd, name)[:, end:], f"{name} on the padding tail")

    # all heads: the second sequence run alone, at small offsets, gives the same bits
    alone = flashqla.chunk_gated_delta_rule_fwd(**tokens(p, T1, end), initial_state=p["initial_state"][1:])
    for name in ("o", "g_cumsum", "A"):
        assert torch.equal(getattr(alone, name), getattr(fwd, name)[:, T1:end]), name
    assert torch.equal(alone.final_state[0], fwd.final_state[1])
    del alone

    # the first and the last v-head over every token, in float64
    v_heads, q_heads = [0, HV - 1], [0, H - 1]
    sub = head_group(p, q_heads, v_heads)
    h0 = sub["initial_state"].double()
    ref1, S1 = forward(sub, 0, T1, SCALE, h0[:1], keep=("o", "g_cumsum", "A"))
    ref2, S2 = forward(sub, T1, end, SCALE, h0[1:], keep=("o", "g_cumsum", "A"))
    for name in ("o", "g_cumsum", "A"):
        got = getattr(fwd, name)[:, :end, v_heads]
        check(name, got, torch.cat([ref1[name], ref2[name]], 1), TOL[name], what)
    check("final_state", fwd.final_state[:, v_heads], torch.cat([S1, S2]), TOL["final_state"], what)


def test_int64_offsets_backward():
    T, H, HV, L2, TAIL = MILLION, 2, 20, 963, 37
    T1, end = T - L2 - TAIL, T - TAIL
    p = huge_problem(T, H, HV, N=2, device=DEV)
    assert p["v"].numel() > 2**31  # v, do, dv (and the SM120 program's fp32 dq/dk per v-head); h, dh twice as many
    cu = torch.tensor([0, T1, end], dtype=torch.int32, device=DEV)
    what = f"bwd T={T} H={H} HV={HV} (2^31+ elements)"
    fwd = flashqla.chunk_gated_delta_rule_fwd(**p, cu_seqlens=cu, output_final_state=False)
    g_cumsum, A = fwd.g_cumsum, fwd.A
    del fwd
    do = torch.randn(1, T, HV, 128, dtype=torch.bfloat16, device=DEV)
    dht = torch.randn(2, HV, 128, 128, device=DEV) / 8
    grads = flashqla.chunk_gated_delta_rule_bwd(p["q"], p["k"], p["v"], g_cumsum, p["beta"], A, do, dht,
                                                initial_state=p["initial_state"], cu_seqlens=cu)
    for name in ("dq", "dk", "dv", "dg", "dbeta"):
        assert_zero(getattr(grads, name)[:, end:], f"{name} on the padding tail")

    # all heads: the second sequence alone gives the same kernel outputs (dq, dk are then summed over
    # v-heads by torch, whose summation order may depend on the size: within bf16 rounding)
    w = tokens(p, T1, end)
    alone = flashqla.chunk_gated_delta_rule_bwd(w["q"], w["k"], w["v"], g_cumsum[:, T1:end], w["beta"], A[:, T1:end],
                                                do[:, T1:end], dht[1:], initial_state=p["initial_state"][1:])
    for name in ("dv", "dg", "dbeta"):
        assert torch.equal(getattr(alone, name), getattr(grads, name)[:, T1:end]), name
    assert torch.equal(alone.dh0[0], grads.dh0[1])
    for name in ("dq", "dk"):
        assert rel_err(getattr(alone, name), getattr(grads, name)[:, T1:end]) <= 1e-3, name
    del alone

    # q/k head 1 and its v-heads (the largest offsets), float64: the last WINDOW tokens of the long
    # sequence from the reference state there
    q_heads, v_heads = [1], list(range(HV // H, HV))
    sub = head_group(p, q_heads, v_heads)
    s = (T1 - WINDOW) // 64 * 64
    _, S_s = forward(sub, 0, s, SCALE, sub["initial_state"][:1].double(), keep=())
    w = tokens(sub, s, T1)
    ref = chunk_bwd_ref(w["q"], w["k"], w["v"], chunk_local_cumsum_ref(w["g"]), w["beta"], do[:, s:T1, v_heads],
                        dht[:1, v_heads], SCALE, S_s)
    for name, r in zip(("dq", "dk", "dv", "dg", "dbeta"), ref):
        heads = q_heads if name in ("dq", "dk") else v_heads
        check(name, getattr(grads, name)[:, s:T1, heads], r, TOL["grad"], what + " last tokens")
    del grads

    # the first WINDOW tokens and dh0: a loss on o[:, :WINDOW] only; every later gradient is exactly 0
    do[:, WINDOW:] = 0
    grads = flashqla.chunk_gated_delta_rule_bwd(p["q"], p["k"], p["v"], g_cumsum, p["beta"], A, do, None,
                                                initial_state=p["initial_state"], cu_seqlens=cu)
    w = tokens(sub, 0, WINDOW)
    ref = chunk_bwd_ref(w["q"], w["k"], w["v"], chunk_local_cumsum_ref(w["g"]), w["beta"], do[:, :WINDOW, v_heads],
                        None, SCALE, sub["initial_state"][:1])
    for name, r in zip(("dq", "dk", "dv", "dg", "dbeta"), ref):
        heads = q_heads if name in ("dq", "dk") else v_heads
        check(name, getattr(grads, name)[:, :WINDOW, heads], r, TOL["grad"], what + " first tokens")
        assert_zero(getattr(grads, name)[:, WINDOW:], f"{name} after the loss window")
    check("dh0", grads.dh0[:1, v_heads], ref[5], TOL["grad"], what + " first tokens")
    assert_zero(grads.dh0[1], "dh0 of the sequence without loss")


@pytest.mark.parametrize("prep", ["grouped", "one_v_head_per_cta"])
def test_chunk_prep_over_several_launches(prep, monkeypatch):
    """More chunk slots than one launch of the chunk prep takes (65535 on blockIdx.z): the slots past the
    first launch (the first sequence's last chunks, all of the second) against the float64 stages and the
    second sequence run alone; H = 1, HV = 2: both v-heads in one CTA, or one per CTA (FLASHQLA_PREP_GROUP=0)."""
    monkeypatch.setenv("FLASHQLA_PREP_GROUP", "1" if prep == "grouped" else "0")
    T, L2, TAIL = 64 * 65536 + 4096, 3000, 40
    T1, end = T - L2 - TAIL, T - TAIL
    p = huge_problem(T, 1, 2, N=2, device=DEV)
    cu = torch.tensor([0, T1, end], dtype=torch.int32, device=DEV)
    assert (T + 63) // 64 + 2 > 65535
    # no context parallelism: the two runs would split the second sequence differently (other roundings)
    fwd = flashqla.chunk_gated_delta_rule_fwd(**p, cu_seqlens=cu, cp_segment_chunks=0)
    for name in ("o", "g_cumsum", "A"):
        assert_zero(getattr(fwd, name)[:, end:], f"{name} on the padding tail")
    alone = flashqla.chunk_gated_delta_rule_fwd(**tokens(p, T1, end), initial_state=p["initial_state"][1:],
                                                cp_segment_chunks=0)
    for name in ("o", "g_cumsum", "A"):
        assert torch.equal(getattr(alone, name), getattr(fwd, name)[:, T1:end]), name
    s = 65530 * 64  # chunk-aligned: slots 65530 .. of the first sequence, across the launch boundary
    w = tokens(p, s, T1)
    check("g_cumsum", fwd.g_cumsum[:, s:T1], chunk_local_cumsum_ref(w["g"]), TOL["g_cumsum"], "prep past 65535")
    check("A", fwd.A[:, s:T1], kkt_solve_ref(w["k"], w["beta"]), TOL["A"], "prep past 65535")
