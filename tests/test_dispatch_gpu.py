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
    major, minor = torch.cuda.get_device_capability()
    has = any(k["kernel"] == "gdn_bwd_chunk" and k["key"].get("gmax") == gmax and k["family"] == f"sm{major}{minor}"
              and k["arch"] == f"sm_{major}{minor}a" for k in flashqla.build_manifest()["kernels"])
    names = _bwd_chunk_kernel_names(H, HV)
    assert len(names) == 1, names
    name = names.pop()
    if gmax and has:
        assert f"_gmax{gmax}_" in name, name
    else:
        assert "_gmax" not in name, name
