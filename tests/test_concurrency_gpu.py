"""Concurrency and call-to-call state on the GPU (marked gpu): the forward and backward on two CUDA streams
at once, and from two Python threads (each on its own stream, or both on the default stream), give bitwise
the results of serial runs; so do the first calls of a fresh process made by two threads at once (the
per-device kernel setup races); and nothing of one call leaks into the next (new sequence lengths in the
same cu_seqlens buffer, other options, other shapes) even with output poisoning off and the freed
memory of earlier calls filled with NaN."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch

import flashqla
from gdn_inputs import make_problem, ragged_cu_seqlens

pytestmark = pytest.mark.gpu
DEV = "cuda"
NAMES = ("q", "k", "v", "g", "beta", "initial_state")


def workload(seed: int, lengths=(6000, 1, 2000), tail=17, H=2, HV=4, dtype=torch.bfloat16):
    """Few heads and long sequences: few CTAs that run for a while, so two streams really overlap."""
    torch.manual_seed(seed)
    T = sum(lengths) + tail
    p = make_problem(1, T, H, HV, device=DEV, N=len(lengths), dtype=dtype)
    do = torch.randn(1, T, HV, 128, device=DEV)
    dht = torch.randn(len(lengths), HV, 128, 128, device=DEV) / 8
    return p, ragged_cu_seqlens(list(lengths), DEV), do, dht


def step(p, cu, do, dht, **kw) -> list[torch.Tensor]:
    """Forward and backward; returns o, the final state and the six gradients."""
    leaves = {n: p[n].detach().clone().requires_grad_() for n in NAMES if p.get(n) is not None}
    o, ht = flashqla.chunk_gated_delta_rule(**leaves, output_final_state=True, cu_seqlens=cu, **kw)
    ((o.float() * do).sum() + (ht * dht).sum()).backward()
    return [o.detach(), ht.detach()] + [leaves[n].grad for n in leaves]


def assert_bitwise(got: list[torch.Tensor], want: list[torch.Tensor], what: str) -> None:
    assert len(got) == len(want), what
    for i, (a, b) in enumerate(zip(got, want)):
        assert torch.equal(a, b), f"{what}: result {i} differs"


def test_two_streams_match_serial():
    work = [workload(seed) for seed in (1, 2)]
    serial = [step(*w) for w in work]
    streams = [torch.cuda.Stream() for _ in work]
    for s in streams:
        s.wait_stream(torch.cuda.current_stream())
    for rep in range(3):
        results = [None, None]
        for i, (s, w) in enumerate(zip(streams, work)):  # launched back to back: the kernels overlap
            with torch.cuda.stream(s):
                results[i] = step(*w)
        torch.cuda.synchronize()
        for i in range(2):
            assert_bitwise(results[i], serial[i], f"stream {i}, repetition {rep}")


def test_forward_and_backward_on_two_streams():
    """One stream runs forwards while the other runs a backward of another problem."""
    a, b = workload(3), workload(4, lengths=(3000, 3000), H=4, HV=16)
    fwd_serial = flashqla.chunk_gated_delta_rule(**a[0], output_final_state=True, cu_seqlens=a[1])
    step_serial = step(*b)
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    s1.wait_stream(torch.cuda.current_stream())
    s2.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s2):
        got_step = step(*b)
    with torch.cuda.stream(s1):
        got_fwd = [flashqla.chunk_gated_delta_rule(**a[0], output_final_state=True, cu_seqlens=a[1])
                   for _ in range(4)]
    torch.cuda.synchronize()
    assert_bitwise(got_step, step_serial, "backward stream")
    for i, f in enumerate(got_fwd):
        assert_bitwise(list(f), list(fwd_serial), f"forward {i}")


@pytest.mark.parametrize("own_stream", [True, False], ids=["own-streams", "default-stream"])
def test_two_threads_match_serial(own_stream):
    work = [workload(seed, dtype=dtype) for seed, dtype in ((5, torch.bfloat16), (6, torch.float16))]
    serial = [step(*w) for w in work]
    torch.cuda.synchronize()
    results: list[list] = [[], []]
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def worker(i: int) -> None:
        try:
            stream = torch.cuda.Stream() if own_stream else torch.cuda.current_stream()
            with torch.cuda.stream(stream):
                barrier.wait()
                for _ in range(4):
                    results[i].append(step(*work[i]))
                stream.synchronize()
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    torch.cuda.synchronize()
    for i in range(2):
        assert len(results[i]) == 4
        for rep, got in enumerate(results[i]):
            assert_bitwise(got, serial[i], f"thread {i}, call {rep}")


COLD_START = """
import threading, torch, flashqla
from gdn_inputs import make_problem, ragged_cu_seqlens
from test_concurrency_gpu import step, workload, assert_bitwise
work = [workload(7, dtype=torch.bfloat16), workload(8, dtype=torch.float16)]
torch.cuda.synchronize()
results, errors, barrier = [None, None], [], threading.Barrier(2)
def worker(i):
    try:
        with torch.cuda.stream(torch.cuda.Stream()):
            barrier.wait()  # both threads make this process's first flashqla calls at the same time
            results[i] = step(*work[i])
            torch.cuda.current_stream().synchronize()
    except BaseException as e:
        errors.append(e)
threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
[t.start() for t in threads]
[t.join() for t in threads]
assert not errors, errors
for i in range(2):
    assert_bitwise(results[i], step(*work[i]), f"thread {i}")
print("cold start ok")
"""


def test_cold_start_from_two_threads():
    """Fresh process: the first launches of every kernel variant (per-device setup, driver entry point)
    come from two threads at once, bf16 in one and fp16 in the other."""
    here = Path(__file__).parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(here), os.environ.get("PYTHONPATH")])))
    run = subprocess.run([sys.executable, "-c", COLD_START], capture_output=True, text=True, timeout=300, env=env,
                         cwd=here)
    assert run.returncode == 0 and "cold start ok" in run.stdout, run.stderr[-3000:]


def _dirty_free_memory(T: int, N: int, H: int, HV: int, templates: list[torch.Tensor]) -> None:
    """Fill the blocks a call of this shape frees (its outputs like `templates`, the backward's workspaces)
    with NaN: the caching allocator hands same-size blocks to the next call, so a stale read would show."""
    slots = (T + 63) // 64 + N
    shapes = [((slots, HV, 128, 128), torch.bfloat16)] * 2 + [((1, T, HV, 128), torch.float32)] * 2
    junk = [torch.full(s, float("nan"), dtype=dt, device=DEV) for s, dt in shapes]
    junk += [torch.full_like(t, float("nan")) for t in templates]
    del junk


def test_no_state_between_calls(monkeypatch):
    monkeypatch.setenv("FLASHQLA_POISON_OUTPUTS", "0")  # outputs start as whatever the allocator hands out
    p, _, do, dht = workload(9, lengths=(700, 600, 700))
    cu_a, cu_b = [0, 700, 1300, 2000], [0, 64, 65, 2000]  # same shape, other sequence lengths
    fresh_b = step(p, torch.tensor(cu_b, dtype=torch.int32, device=DEV), do, dht)
    fresh_a = step(p, torch.tensor(cu_a, dtype=torch.int32, device=DEV), do, dht)
    buffer = torch.tensor(cu_a, dtype=torch.int32, device=DEV)
    T, HV = p["v"].shape[1], p["v"].shape[2]
    for rep in range(2):
        for values, fresh in ((cu_b, fresh_b), (cu_a, fresh_a)):
            _dirty_free_memory(T, 3, 2, HV, fresh)
            buffer.copy_(torch.tensor(values, dtype=torch.int32))
            assert_bitwise(step(p, buffer, do, dht), fresh, f"cu_seqlens {values}, repetition {rep}")

    # other options, dtypes and shapes in between change nothing either
    small = workload(10, lengths=(5, 60), tail=3, H=1, HV=3, dtype=torch.float16)
    fresh_small = step(*small)
    for kw in (dict(state_v_first=True), dict(use_qk_l2norm_in_kernel=True), dict(scale=0.01)):
        step(p, buffer, do, dht, **kw)
        no_h0 = dict(p, initial_state=None)
        flashqla.chunk_gated_delta_rule(**no_h0, cu_seqlens=buffer)
        _dirty_free_memory(T, 3, 2, HV, fresh_a + fresh_small)
        assert_bitwise(step(*small), fresh_small, f"after {kw}")
        assert_bitwise(step(p, buffer, do, dht), fresh_a, f"after {kw}")
