"""Kernel selection on the GPU: a request for a kernel family the build lacks fails with an error
that names the GPU and the architectures compiled in (the path a GPU without kernels takes)."""

from __future__ import annotations

import pytest
import torch

import flashqla
from gdn_inputs import make_problem

pytestmark = pytest.mark.gpu


def test_missing_family_error_names_the_compiled_archs(monkeypatch):
    monkeypatch.setenv("FLASHQLA_KERNEL_FAMILY", "sm80")
    p = make_problem(1, 64, 1, 1, device="cuda")
    cc = torch.cuda.get_device_capability()
    with pytest.raises(RuntimeError) as info:
        flashqla.chunk_gated_delta_rule(**p)
    msg = str(info.value)
    assert "no sm80 gdn_chunk_prep kernel" in msg
    assert f"compute capability {cc[0]}.{cc[1]}" in msg
    for arch in flashqla.build_manifest()["archs"]:
        assert arch in msg.split("Compiled in:")[1]


def test_kernels_run_after_a_failed_selection(monkeypatch):
    # the error leaves nothing behind: the next call with the device's own family works
    monkeypatch.setenv("FLASHQLA_KERNEL_FAMILY", "sm80")
    p = make_problem(1, 64, 1, 1, device="cuda")
    with pytest.raises(RuntimeError):
        flashqla.chunk_gated_delta_rule(**p)
    monkeypatch.delenv("FLASHQLA_KERNEL_FAMILY")
    o, _ = flashqla.chunk_gated_delta_rule(**p)
    assert torch.isfinite(o).all()


def _built_for_this_gpu(kernel: str, key: str, value: int) -> bool:
    """Whether the build has a variant of `kernel` with key[key] == value for this GPU's own family and arch
    (build_manifest)."""
    major, minor = torch.cuda.get_device_capability()
    return any(k["kernel"] == kernel and k["key"].get(key) == value and k["family"] == f"sm{major}{minor}"
               and k["arch"] == f"sm_{major}{minor}a" for k in flashqla.build_manifest()["kernels"])


def _bwd_chunk_kernel_names(H: int, HV: int) -> set[str]:
    """The chunk-gradient kernels a forward + backward at (H, HV) launches (torch.profiler)."""
    p = make_problem(1, 256, H, HV, device="cuda")
    for name in ("q", "k", "v", "g", "beta"):
        p[name].requires_grad_()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        o, ht = flashqla.chunk_gated_delta_rule(**p, output_final_state=True)
        torch.autograd.backward([o, ht], [torch.randn_like(o), torch.randn_like(ht)])
        torch.cuda.synchronize()
    assert torch.isfinite(p["q"].grad).all()
    return {e.key for e in prof.key_averages() if "gdn_bwd_chunk" in e.key}


@pytest.mark.parametrize("H,HV,gmax", [(2, 2, 1), (1, 1, 1), (2, 4, 2), (2, 6, 0), (1, 4, 0)])
def test_chunk_gradient_variant_by_group(H, HV, gmax, monkeypatch):
    # groups of one v-head per qk-head run the chunk gradient's variant of key gmax 1, of two the one of gmax 2, where
    # the build has them for this GPU's family (tilelang_src/variants.py), larger groups the default kernel (one
    # v-head per qk-head runs the fused backward by default where the build has it: tests/test_fused_bwd_gpu.py; the
    # two passes here)
    monkeypatch.setenv("FLASHQLA_FUSED_BWD", "0")
    has = _built_for_this_gpu("gdn_bwd_chunk", "gmax", gmax)
    names = _bwd_chunk_kernel_names(H, HV)
    assert len(names) == 1, names
    name = names.pop()
    if gmax and has:
        assert f"_gmax{gmax}_" in name, name
    else:
        assert "_gmax" not in name, name


def _fwd_kernel_names(p: dict, train: bool) -> list[str]:
    """The fused-forward kernels (gdn_fwd, not the prep-free or register-operand ones) a call launches, in launch
    order (torch.profiler): the forward alone without gradients, or a training step (forward, then the backward's
    state recompute)."""
    leaves = {n: p[n].clone().requires_grad_(train) for n in ("q", "k", "v", "g", "beta")}
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        o, ht = flashqla.chunk_gated_delta_rule(**leaves, initial_state=p["initial_state"], output_final_state=True,
                                                cu_seqlens=p.get("cu_seqlens"))
        if train:
            torch.autograd.backward([o, ht], [torch.randn_like(o), torch.randn_like(ht)])
        torch.cuda.synchronize()
    assert torch.isfinite(o).all()
    events = sorted((e for e in prof.events() if "gdn_fwd_sm" in e.name), key=lambda e: e.time_range.start)
    return [e.name for e in events]


def test_forward_width_where_the_heads_leave_sms_idle(monkeypatch):
    # one segment per sequence (cp_segment_chunks is left to the plan; 2048 tokens at 8 v-heads are one segment) and
    # N * HV * 4 <= the SM count: the forward takes the 32-wide slice where the build has it for this GPU's family,
    # the backward's state recompute (which stores the chunk states) the 64-wide one; FLASHQLA_FWD_BLOCK_V=64 keeps 64
    has = _built_for_this_gpu("gdn_fwd", "bv", 32)
    p = make_problem(1, 2048, 8, 8, device="cuda")
    monkeypatch.setenv("FLASHQLA_FWD_NOPREP", "0")  # (a prefill on the 128-wide plan would run the prep-free kernel)
    infer = _fwd_kernel_names(p, train=False)
    train = _fwd_kernel_names(p, train=True)
    want = "_bv32" if has else "_bv64"
    assert len(infer) == 1 and want in infer[0], infer
    assert len(train) == 2 and want in train[0] and "_bv64" in train[1], train
    monkeypatch.setenv("FLASHQLA_FWD_BLOCK_V", "64")
    assert all("_bv64" in n for n in _fwd_kernel_names(p, train=True))
