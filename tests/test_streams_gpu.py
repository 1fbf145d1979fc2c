"""The backward's state recompute on a side stream beside the state gradient (csrc/ops/gdn_bwd.cpp; docs/ops.md,
"Streams"), on the GPU (skipped elsewhere): the gradients bitwise those of every launch on one stream
(FLASHQLA_SINGLE_STREAM=1; the same kernels on the same inputs, only their order across two streams differs),
with context parallelism off, forced and automatic, with decaying and non-decaying heads, through the op and
through autograd; and a step on a non-default stream right after its inputs were written there reads them
written (the side stream waits for the caller's). A training step captured in a CUDA graph with context
parallelism (the fork and join inside the capture): tests/test_callers_gpu.py, case "cp"."""

from __future__ import annotations

import pytest
import torch

import flashqla
from gdn_inputs import make_problem, ragged_cu_seqlens

pytestmark = pytest.mark.gpu
DEV = "cuda"
NAMES = ("q", "k", "v", "g", "beta", "initial_state")
CASES = {
    # (lengths, padding tail, cp_segment_chunks)
    "ragged-nocp": ([130, 0, 64, 77], 5, 0),
    "ragged-cp2": ([700, 300, 1], 0, 2),
    "ragged-cp3": ([1000, 0, 64, 900], 3, 3),
    "long-auto": ([8192], 0, -1),
}


def single_stream(monkeypatch, on: bool):
    if on:
        monkeypatch.setenv("FLASHQLA_SINGLE_STREAM", "1")
    else:
        monkeypatch.delenv("FLASHQLA_SINGLE_STREAM", raising=False)


def case_problem(case, gate="strong"):
    """gate: "strong" (make_gate's: head 0 never decays, so its segments take the exact fallback, the others
    decay fast, so theirs warm up), "mild" (slow decay everywhere: which segments' warm-ups reach the threshold
    depends on the segment length) or "none" (g = 0: every segment takes the fallback)."""
    lengths, tail, cp = CASES[case]
    T = sum(lengths) + tail
    p = make_problem(1, T, 2, 4, device=DEV, N=len(lengths), gate="mild" if gate == "mild" else "strong")
    if gate == "none":
        p["g"].zero_()
    do, dht = torch.randn(1, T, 4, 128, device=DEV), torch.randn(len(lengths), 4, 128, 128, device=DEV) / 8
    return p, ragged_cu_seqlens(lengths, DEV), cp, do, dht


def autograd_grads(p, cu, do, dht, **kw):
    leaves = {n: p[n].detach().clone().requires_grad_() for n in NAMES}
    o, ht = flashqla.chunk_gated_delta_rule(**leaves, output_final_state=True, cu_seqlens=cu, **kw)
    ((o.float() * do).sum() + (ht * dht).sum()).backward()
    return [leaves[n].grad for n in NAMES]


def op_backward(p, cu, cp, fwd, do, dht):
    """flashqla.chunk_gated_delta_rule_bwd on problem p from its forward fwd's g_cumsum and A, with CP setting cp."""
    return flashqla.chunk_gated_delta_rule_bwd(p["q"], p["k"], p["v"], fwd.g_cumsum, p["beta"], fwd.A, do, dht,
                                               initial_state=p["initial_state"], cu_seqlens=cu, cp_segment_chunks=cp)


@pytest.mark.parametrize("gate", ["strong", "mild", "none"])
@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_backward_with_side_stream_is_the_single_stream_one(case, gate, monkeypatch):
    p, cu, cp, do, dht = case_problem(case, gate)
    fwd = flashqla.chunk_gated_delta_rule_fwd(**p, cu_seqlens=cu, cp_segment_chunks=cp)

    def op_grads(on):
        single_stream(monkeypatch, on)
        return op_backward(p, cu, cp, fwd, do, dht)

    for name, a, b in zip(flashqla.GdnGrads._fields, op_grads(True), op_grads(False)):
        assert not torch.isnan(b).any(), f"{case}/{gate}: {name} has NaN with side streams"
        assert torch.equal(a, b), f"{case}/{gate}: {name} differs between one stream and side streams"
    if cp == -1:
        single_stream(monkeypatch, True)
        want = autograd_grads(p, cu, do, dht)
        single_stream(monkeypatch, False)
        for name, a, b in zip(NAMES, want, autograd_grads(p, cu, do, dht)):
            assert torch.equal(a, b), f"{case}/{gate}: d{name} differs between one stream and side streams"


def test_step_on_a_caller_stream_reads_inputs_written_there():
    p, cu, cp, do, dht = case_problem("long-auto")
    want = autograd_grads(p, cu, do, dht)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        # the inputs rewritten on s just before the step: a recompute that did not wait for s would read stale ones
        fresh = {n: torch.empty_like(t) for n, t in p.items()}
        torch.cuda._sleep(50_000_000)  # about 25 ms of work ahead of the copies on s
        for n in fresh:
            fresh[n].copy_(p[n])
        got = autograd_grads(fresh, cu, do, dht)
    torch.cuda.current_stream().wait_stream(s)
    for n, a, b in zip(NAMES, want, got):
        assert torch.equal(a, b), f"d{n} differs when the step runs on a non-default stream"


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_recompute_forked_after_the_tables_gives_the_same_gradients(case, monkeypatch):
    """The fork's place (csrc/ops/gdn_bwd.cpp: before the state gradient's segment tables by default, after them with
    FLASHQLA_BWD_FORK_AFTER_TABLES=1) changes only the order of the launches across the two streams."""
    p, cu, cp, do, dht = case_problem(case)
    fwd = flashqla.chunk_gated_delta_rule_fwd(**p, cu_seqlens=cu, cp_segment_chunks=cp)

    def op_grads(after: bool):
        monkeypatch.setenv("FLASHQLA_BWD_FORK_AFTER_TABLES", "1" if after else "0")
        return op_backward(p, cu, cp, fwd, do, dht)

    for name, a, b in zip(flashqla.GdnGrads._fields, op_grads(False), op_grads(True)):
        assert not torch.isnan(b).any(), f"{case}: {name} has NaN with the recompute forked after the tables"
        assert torch.equal(a, b), f"{case}: {name} differs with the fork's place"


def test_fork_setting_other_than_0_or_1_is_rejected(monkeypatch):
    p, cu, cp, do, dht = case_problem("ragged-cp2")
    fwd = flashqla.chunk_gated_delta_rule_fwd(**p, cu_seqlens=cu, cp_segment_chunks=cp)
    monkeypatch.setenv("FLASHQLA_BWD_FORK_AFTER_TABLES", "yes")
    with pytest.raises(RuntimeError, match="FLASHQLA_BWD_FORK_AFTER_TABLES must be 0 or 1"):
        op_backward(p, cu, cp, fwd, do, dht)
