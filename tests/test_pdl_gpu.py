"""Programmatic dependent launch (tilelang_src/common/grid_dependency.py; sm90 builds) on the GPU (skipped elsewhere).
It changes when a kernel's CTAs start, never what they compute: every kernel waits for the one before it before it
touches global memory. So a training step (forward with context parallelism, backward through autograd, also
replayed from a CUDA graph) gives bitwise the same outputs and gradients with PDL on (FLASHQLA_PDL unset) and off
(FLASHQLA_PDL=0, read once per process: each setting runs in a process of its own), and a FLASHQLA_PDL other than
0 or 1 fails the call with a message naming the variable. Skipped where the build's kernels for the GPU do not use
PDL (tilelang_src/variants.py PDL_FAMILIES; empty in this release)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from flashqla._ops import build_manifest, kernel_family

pytestmark = pytest.mark.gpu
TESTS = Path(__file__).resolve().parent

# one process: a ragged batch with a long sequence (context parallelism on, warm-up and exact fallback heads) and
# short ones, forward and backward through autograd eagerly and from a CUDA graph; every output to argv[1]
STEP = r"""
import sys
import torch
import flashqla
from gdn_inputs import make_problem, ragged_cu_seqlens

torch.manual_seed(0)
lengths = [4096, 130, 64, 1]
T = sum(lengths) + 3
p = make_problem(1, T, 2, 4, device="cuda", N=len(lengths))
cu = ragged_cu_seqlens(lengths, "cuda")
do = torch.randn(1, T, 4, 128, device="cuda")
leaves = {n: t.detach().clone().requires_grad_() for n, t in p.items()}


def step():
    for t in leaves.values():
        t.grad = None
    o, ht = flashqla.chunk_gated_delta_rule(**leaves, output_final_state=True, cu_seqlens=cu)
    ((o.float() * do).sum() + ht.sum()).backward()
    return [o.detach().clone(), ht.detach().clone()] + [leaves[n].grad.clone() for n in leaves]


eager = step()
torch.cuda.synchronize()
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    step()  # warm-up on the capture stream
torch.cuda.current_stream().wait_stream(s)
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    captured = step()
graph.replay()
torch.cuda.synchronize()
torch.save({"eager": [t.cpu() for t in eager], "graph": [t.cpu() for t in captured]}, sys.argv[1])
"""


def run_step(tmp_path: Path, setting: str | None) -> tuple[subprocess.CompletedProcess, Path]:
    """STEP in a fresh process with FLASHQLA_PDL=setting (None: unset); the process and its output file"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    env.pop("FLASHQLA_PDL", None)
    if setting is not None:
        env["FLASHQLA_PDL"] = setting
    out = tmp_path / f"pdl_{setting}.pt"
    return subprocess.run([sys.executable, "-c", STEP, str(out)], env=env, capture_output=True, text=True,
                          timeout=300), out


def require_pdl_kernels():
    """The installed build's kernels of this GPU's family use PDL (variants.py PDL_FAMILIES: sm90 only)."""
    family = kernel_family(torch.cuda.get_device_capability())
    if not any(k["uses_pdl"] for k in build_manifest().get("kernels", []) if k["family"] == family):
        pytest.skip(f"this build's {family} kernels do not use PDL")


def test_step_is_bitwise_the_same_with_and_without_pdl(tmp_path):
    require_pdl_kernels()
    results = {}
    for setting in ("0", None):
        proc, out = run_step(tmp_path, setting)
        assert proc.returncode == 0, proc.stderr[-3000:]
        results[setting] = torch.load(out)
    for kind in ("eager", "graph"):
        off, on = results["0"][kind], results[None][kind]
        assert len(off) == len(on) == 8
        for i, (a, b) in enumerate(zip(off, on)):
            assert torch.isfinite(b).all(), f"{kind} output {i} has non-finite values"
            assert torch.equal(a, b), f"{kind} output {i} differs between FLASHQLA_PDL=0 and the default"
    # and the graph replay matches the eager step (same kernels, same inputs)
    for i, (a, b) in enumerate(zip(results[None]["eager"], results[None]["graph"])):
        assert torch.equal(a, b), f"output {i}: the CUDA graph's replay differs from the eager step"


def test_invalid_setting_names_the_variable(tmp_path):
    require_pdl_kernels()
    proc, _ = run_step(tmp_path, "yes")
    assert proc.returncode != 0
    assert "FLASHQLA_PDL must be 0 or 1" in proc.stderr, proc.stderr[-3000:]
