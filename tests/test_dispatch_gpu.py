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
