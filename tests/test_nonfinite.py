"""NaN and Inf in the inputs (docs/errors.md, "NaN and Inf"): never checked (a check would need a
device-to-host copy), never a hang or a crash, and confined to where they are: a non-finite value in one
sequence's tokens (or its initial state) leaves every other sequence's outputs, final state and gradients
bitwise unchanged, and the padding tail exactly 0; non-finite padding tokens change nothing at all.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import flashqla
from gdn_inputs import make_problem, ragged_cu_seqlens

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
BAD = {"nan": float("nan"), "+inf": float("inf"), "-inf": float("-inf")}
NAMES = ("q", "k", "v", "g", "beta", "initial_state")
# three sequences and a padding tail; sequence 1 gets the bad value
LAYOUT = {"cpu": ([70, 40, 30], 10, 1, 2), "cuda": ([130, 200, 70], 30, 2, 8)}  # lengths, tail, H, HV


def problem(d: str):
    lengths, tail, H, HV = LAYOUT[d]
    p = make_problem(1, sum(lengths) + tail, H, HV, device=d, N=len(lengths))
    return p, ragged_cu_seqlens(lengths, d), lengths


def spoil(p: dict, name: str, value: float, token: int, seq: int) -> dict:
    """A copy of p with one element of `name` set to value: at `token` (per-token tensors) or in the
    initial state of sequence `seq`."""
    out = dict(p)
    out[name] = p[name].clone()
    if name == "initial_state":
        out[name][seq, 0, 3, 5] = value
    else:
        out[name][0, token] = value
    return out


def spans(lengths):
    starts = [sum(lengths[:i]) for i in range(len(lengths))]
    return [(s, s + n) for s, n in zip(starts, lengths)]


def forward_and_grads(p, cu, do, dht):
    leaves = {n: p[n].detach().clone().requires_grad_() for n in NAMES}
    o, ht = flashqla.chunk_gated_delta_rule(**leaves, output_final_state=True, cu_seqlens=cu)
    ((o.float() * do).sum() + (ht * dht).sum()).backward()
    return o.detach(), ht.detach(), {n: leaves[n].grad for n in NAMES}


def assert_other_sequences_unchanged(clean, dirty, lengths, spoiled_seq):
    o0, ht0, g0 = clean
    o1, ht1, g1 = dirty
    end = sum(lengths)
    for n, (s, e) in enumerate(spans(lengths)):
        if n == spoiled_seq:
            continue
        assert torch.equal(o1[:, s:e], o0[:, s:e]), f"o of sequence {n}"
        assert torch.equal(ht1[n], ht0[n]), f"final state of sequence {n}"
        for name in NAMES:
            got, want = (g1[name][n], g0[name][n]) if name == "initial_state" else (g1[name][:, s:e], g0[name][:, s:e])
            assert torch.equal(got, want), f"d{name} of sequence {n}"
    assert torch.equal(o1[:, end:], torch.zeros_like(o1[:, end:])), "padding tail of o"
    for name in ("q", "k", "v", "g", "beta"):
        assert torch.equal(g1[name][:, end:], torch.zeros_like(g1[name][:, end:])), f"d{name} on the padding tail"


_CLEAN: dict[str, tuple] = {}


def clean_run(d: str):
    """The problem, its loss weights and its clean results (computed once per device)."""
    if d not in _CLEAN:
        p, cu, lengths = problem(d)
        T, HV = p["v"].shape[1], p["v"].shape[2]
        do = torch.randn(1, T, HV, 128, device=d)
        dht = torch.randn(len(lengths), HV, 128, 128, device=d) / 8
        _CLEAN[d] = (p, cu, lengths, do, dht, forward_and_grads(p, cu, do, dht))
    return _CLEAN[d]


@pytest.mark.parametrize("bad", list(BAD))
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("d", DEVICES)
def test_non_finite_stays_in_its_sequence(d, name, bad):
    p, cu, lengths, do, dht, clean = clean_run(d)
    s, e = spans(lengths)[1]
    positions = [s + (e - s) // 2] if d == "cpu" else [s, s + 77, e - 1]  # first, middle, last token
    for token in positions:
        dirty = forward_and_grads(spoil(p, name, BAD[bad], token, 1), cu, do, dht)
        assert_other_sequences_unchanged(clean, dirty, lengths, spoiled_seq=1)
    if d == "cuda":
        torch.cuda.synchronize()


@pytest.mark.parametrize("d", DEVICES)
def test_non_finite_padding_changes_nothing(d):
    """Padding tokens (after cu_seqlens[-1]) are never read: NaN/Inf there leave every result bitwise equal."""
    p, cu, lengths, do, dht, clean = clean_run(d)
    dirty = dict(p)
    end = sum(lengths)
    for i, name in enumerate(("q", "k", "v", "g", "beta")):
        dirty[name] = p[name].clone()
        dirty[name][0, end:] = list(BAD.values())[i % 3]
    got = forward_and_grads(dirty, cu, do, dht)
    assert torch.equal(got[0], clean[0]) and torch.equal(got[1], clean[1])
    for name in NAMES:
        assert torch.equal(got[2][name][:, :end] if name != "initial_state" else got[2][name],
                           clean[2][name][:, :end] if name != "initial_state" else clean[2][name]), name


@pytest.mark.parametrize("d", DEVICES)
def test_non_finite_in_one_batch_row(d):
    """Dense batches: a NaN in batch row 1 leaves rows 0 and 2 unchanged."""
    p = make_problem(3, 100, 1, 2, device=d)
    clean, _ = flashqla.chunk_gated_delta_rule(**p, output_final_state=True)
    dirty = dict(p, v=p["v"].clone())
    dirty["v"][1, 50] = float("nan")
    o, ht = flashqla.chunk_gated_delta_rule(**dirty, output_final_state=True)
    assert torch.equal(o[0], clean[0]) and torch.equal(o[2], clean[2])
    assert not bool(torch.isfinite(o[1]).all())


CHILD = """
import torch, flashqla
from gdn_inputs import make_problem, ragged_cu_seqlens
cu = ragged_cu_seqlens([100, 1, 0, 300], "cuda")
for dtype in (torch.bfloat16, torch.float16):
    for fill in (float("nan"), float("inf"), float("-inf"), 1e30, -1e30):
        p = make_problem(1, 420, 2, 4, dtype=dtype, device="cuda", N=4)
        for n in p:
            big = torch.finfo(p[n].dtype).max  # fp16 cannot hold 1e30: its largest finite value stands in
            value = max(-big, min(big, fill)) if abs(fill) != float("inf") and fill == fill else fill
            p[n] = torch.full_like(p[n], value).requires_grad_()
        o, ht = flashqla.chunk_gated_delta_rule(**p, output_final_state=True, cu_seqlens=cu)
        (o.float().sum() + ht.sum()).backward()
        torch.cuda.synchronize()
p = make_problem(1, 100, 1, 1, device="cuda")
o, _ = flashqla.chunk_gated_delta_rule(**p)
assert bool(torch.isfinite(o).all())
print("completed")
"""


@pytest.mark.gpu
def test_all_non_finite_inputs_never_hang():
    """Every input entirely NaN, +Inf, -Inf or +-1e30 (fp16: +-65504), forward and backward, in a
    fresh process with a time limit: it completes, and the device still gives finite results after."""
    here = Path(__file__).parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(here), os.environ.get("PYTHONPATH")])))
    run = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300, env=env, cwd=here)
    assert run.returncode == 0 and "completed" in run.stdout, run.stderr[-3000:]
