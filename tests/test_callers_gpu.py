"""The callers the design card promises, on the GPU: torch.compile (fullgraph, dynamic T, forward and
backward), TorchScript, CUDA-graph capture and replay with new varlen lengths, and a C++ program
calling the op through the dispatcher."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import flashqla
from gdn_inputs import make_problem, ragged_cu_seqlens, rel_err

pytestmark = pytest.mark.gpu
DEV = "cuda"
ROOT = Path(__file__).resolve().parent.parent


class GDNLayer(torch.nn.Module):
    def __init__(self, l2: bool):
        super().__init__()
        self.l2 = l2

    def forward(self, q, k, v, g, beta, h0, cu):
        return flashqla.chunk_gated_delta_rule(q, k, v, g, beta, initial_state=h0, output_final_state=True,
                                               cu_seqlens=cu, use_qk_l2norm_in_kernel=self.l2)


def _fwd_bwd(fn, p, cu, do, dht):
    leaves = {n: p[n].detach().clone().requires_grad_() for n in ("q", "k", "v", "g", "beta", "initial_state")}
    o, ht = fn(leaves["q"], leaves["k"], leaves["v"], leaves["g"], leaves["beta"], leaves["initial_state"], cu)
    ((o.float() * do).sum() + (ht * dht).sum()).backward()
    return [o, ht] + [leaves[n].grad for n in leaves]


@pytest.mark.parametrize("lengths", [[300, 1, 250], [1000, 37, 700]], ids=["T551", "T1737"])
def test_torch_compile_fullgraph(lengths):
    cu = ragged_cu_seqlens(lengths, DEV)
    T = sum(lengths)
    p = make_problem(1, T, 2, 8, device=DEV, N=len(lengths))
    do, dht = torch.randn(1, T, 8, 128, device=DEV), torch.randn(len(lengths), 8, 128, 128, device=DEV)
    args = (p["q"], p["k"], p["v"], p["g"], p["beta"], p["initial_state"], cu)
    for l2 in (False, True):
        explain = torch._dynamo.explain(GDNLayer(l2))(*args)
        assert explain.graph_break_count == 0, explain.break_reasons
    # without the l2norm (which inductor may round differently) compiled and eager run the same kernels
    layer = GDNLayer(False)
    compiled = torch.compile(layer, fullgraph=True, dynamic=True)
    eager = _fwd_bwd(layer, p, cu, do, dht)
    comp = _fwd_bwd(compiled, p, cu, do, dht)
    for a, b in zip(eager, comp):
        assert torch.equal(a, b)


def test_torchscript_calls_the_op():
    @torch.jit.script
    def scripted(q, k, v, g, beta, cu: torch.Tensor):
        return torch.ops.flashqla.gdn_fwd(q, k, v, g, beta, 0.088, None, cu, True, False)

    p = make_problem(1, 333, 2, 4, device=DEV, h0=False)
    cu = ragged_cu_seqlens([100, 233], DEV)
    got = scripted(p["q"], p["k"], p["v"], p["g"], p["beta"], cu)
    want = torch.ops.flashqla.gdn_fwd(p["q"], p["k"], p["v"], p["g"], p["beta"], 0.088, None, cu, True, False)
    for a, b in zip(got, want):
        assert torch.equal(a, b)


def _copy_problem(dst, src):
    with torch.no_grad():
        for n in dst:
            dst[n].copy_(src[n])


def test_cuda_graph_forward_new_lengths():
    """Capture once, replay with new data and new sequence lengths in the same buffers."""
    T, N = 900, 3
    static = make_problem(1, T, 4, 16, device=DEV, N=N)
    cu = ragged_cu_seqlens([300, 200, 350], DEV)

    def run():
        return flashqla.chunk_gated_delta_rule(**static, output_final_state=True, cu_seqlens=cu)

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        run()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        o_static, ht_static = run()
    for lengths in ([1, 898, 0], [64, 65, 700], [300, 200, 350]):
        fresh = make_problem(1, T, 4, 16, device=DEV, N=N)
        _copy_problem(static, fresh)
        cu.copy_(ragged_cu_seqlens(lengths, DEV))
        graph.replay()
        o_eager, ht_eager = flashqla.chunk_gated_delta_rule(**fresh, output_final_state=True,
                                                            cu_seqlens=cu.clone())
        assert torch.equal(o_static, o_eager), lengths
        assert torch.equal(ht_static, ht_eager), lengths


# (v-heads, tokens, lengths at capture, lengths of the replays); "short" captures with a padding tail of 20 tokens
# that a replay's sequences then cover; "cp": few heads and long sequences, so the automatic plan splits them into
# segments, and the backward's recompute forks onto its side stream and joins back inside the capture
# (csrc/ops/gdn_bwd.cpp)
GRAPH_STEP_CASES = {
    "short": (8, 700, [300, 380], ([10, 600], [700, 0])),
    "cp": (4, 6000, [4000, 2000], ([5000, 1000], [6000, 0])),
}


@pytest.mark.parametrize("case", GRAPH_STEP_CASES)
def test_cuda_graph_forward_backward_step(case):
    HV, T, capture_lengths, replay_lengths = GRAPH_STEP_CASES[case]
    N = len(capture_lengths)
    names = ("q", "k", "v", "g", "beta", "initial_state")
    static = {n: t.requires_grad_() for n, t in make_problem(1, T, 2, HV, device=DEV, N=N).items()}
    cu = ragged_cu_seqlens(capture_lengths, DEV)
    do, dht = torch.randn(1, T, HV, 128, device=DEV), torch.randn(N, HV, 128, 128, device=DEV)

    def step():
        o, ht = flashqla.chunk_gated_delta_rule(**static, output_final_state=True, cu_seqlens=cu)
        ((o.float() * do).sum() + (ht * dht).sum()).backward()

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            step()
            for n in names:
                static[n].grad = None
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    for lengths in replay_lengths:
        fresh = make_problem(1, T, 2, HV, device=DEV, N=N)
        _copy_problem(static, fresh)
        cu.copy_(ragged_cu_seqlens(lengths, DEV))
        graph.replay()
        leaves = {n: fresh[n].detach().clone().requires_grad_() for n in names}
        o, ht = flashqla.chunk_gated_delta_rule(**leaves, output_final_state=True, cu_seqlens=cu.clone())
        ((o.float() * do).sum() + (ht * dht).sum()).backward()
        for n in names:
            assert rel_err(static[n].grad, leaves[n].grad.double()) <= 1e-6, (lengths, n)


def closed_form_inputs():
    """The inputs examples/cpp/gdn_fwd_cpp.cpp builds (same formulas, same rounding)."""
    def wave(shape, freq, phase):
        n = 1
        for s in shape:
            n *= s
        return torch.sin(torch.arange(n, dtype=torch.float64) * freq + phase).reshape(shape)

    T, H, HV, D = 200, 2, 4, 128
    return dict(
        q=(wave((1, T, H, D), 0.37, 0.1) * 0.1).to(DEV, torch.bfloat16),
        k=(wave((1, T, H, D), 0.53, 0.7) * 0.1).to(DEV, torch.bfloat16),
        v=wave((1, T, HV, D), 0.29, 1.3).to(DEV, torch.bfloat16),
        g=(-(wave((1, T, HV), 0.11, 0.5) + 1.0) * 0.2).to(DEV, torch.float32),
        beta=(wave((1, T, HV), 0.23, 0.9) * 0.4 + 0.5).to(DEV, torch.float32),
        h0=(wave((2, HV, D, D), 0.013, 0.2) * 0.1).to(DEV, torch.float32),
        cu=torch.tensor([0, 77, 190], dtype=torch.int32, device=DEV))


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not found")
def test_cpp_program_through_dispatcher(tmp_path):
    build = tmp_path / "build"
    prefix = torch.utils.cmake_prefix_path
    for cmd in (["cmake", "-S", str(ROOT / "examples" / "cpp"), "-B", str(build), f"-DCMAKE_PREFIX_PATH={prefix}",
                 "-DCMAKE_BUILD_TYPE=Release"],
                ["cmake", "--build", str(build), "-j", str(os.cpu_count() or 2)]):
        step = subprocess.run(cmd, capture_output=True, text=True)
        assert step.returncode == 0, f"{' '.join(cmd)} failed:\n{step.stdout[-3000:]}\n{step.stderr[-3000:]}"
    out = tmp_path / "out.pt"
    run = subprocess.run([str(build / "gdn_fwd_cpp"), str(flashqla._ops.LIBRARY_PATH), str(out)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    print(run.stdout, file=sys.stderr)
    o_cpp, ht_cpp = torch.load(out)
    x = closed_form_inputs()
    o, ht, *_ = torch.ops.flashqla.gdn_fwd(x["q"], x["k"], x["v"], x["g"], x["beta"], 0.125, x["h0"], x["cu"],
                                           True, False)
    assert torch.equal(o_cpp, o.cpu()) and torch.equal(ht_cpp, ht.cpu())
