"""The fused backward (tilelang_src/sm90/gdn_bwd_fused.py) at one v-head per qk-head on the GPU
(skipped elsewhere, and where the build has no fused kernel for this GPU's family): its gradients against float64 with
the backward's tolerance (tests/test_gdn_bwd_gpu.py), over single sequences with partial chunks, ragged batches with
an empty sequence and a padding tail (whose gradients must be exactly zero), context parallelism forced and automatic,
the state options and fp16; that the fused kernel is what ran (and the two passes' kernels are not); and that an
invalid setting is an error."""

from __future__ import annotations

import pytest
import torch

from gdn_inputs import make_problem, ragged_cu_seqlens, rel_err
from test_gdn_bwd_gpu import (DEV, check_setting_rejected, flashqla_grads, has_fused_kernel, kernels_of_a_backward,
                              run_case, run_ragged_case)

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def fused_on(monkeypatch):
    if not has_fused_kernel():
        pytest.skip("this build has no fused backward for this GPU's kernel family (sm90 only)")
    monkeypatch.setenv("FLASHQLA_FUSED_BWD", "1")


@pytest.mark.parametrize("H", [1, 4, 16])
def test_the_fused_kernel_runs_at_one_v_head_per_qk_head(H):
    names = kernels_of_a_backward(make_problem(1, 1000, H, H, device=DEV))
    assert any("gdn_bwd_fused" in n for n in names) and not any("gdn_bwd_chunk" in n for n in names), names


def test_the_fused_kernel_is_the_default_and_0_turns_it_off(monkeypatch):
    p = make_problem(1, 300, 2, 2, device=DEV)
    monkeypatch.delenv("FLASHQLA_FUSED_BWD")
    assert any("gdn_bwd_fused" in n for n in kernels_of_a_backward(p))
    monkeypatch.setenv("FLASHQLA_FUSED_BWD", "0")
    names = kernels_of_a_backward(p)
    assert not any("gdn_bwd_fused" in n for n in names) and any("gdn_bwd_chunk" in n for n in names), names


def test_larger_groups_keep_the_two_passes(monkeypatch):
    """By default four v-heads per qk-head run the two passes (two run the cluster variant:
    tests/test_fused_groups_gpu.py)."""
    monkeypatch.delenv("FLASHQLA_FUSED_GROUPS", raising=False)
    names = kernels_of_a_backward(make_problem(1, 1000, 2, 8, device=DEV))
    assert not any("gdn_bwd_fused" in n for n in names) and any("gdn_bwd_chunk" in n for n in names), names


@pytest.mark.parametrize("H", [2, 16])
@pytest.mark.parametrize("T", [1, 63, 64, 65, 1000, 4096])
def test_fused_bwd_single_sequence(T, H):
    run_case(make_problem(1, T, H, H, device=DEV), f"fused bwd B=1 T={T} H=HV={H}")


@pytest.mark.parametrize("state_v_first", [False, True], ids=["KV", "VK"])
@pytest.mark.parametrize("cp", [0, 1, 3, -1], ids=["cp-off", "cp1", "cp3", "cp-auto"])
def test_fused_bwd_ragged_with_tail(cp, state_v_first):
    """Segments forced (1 and 3 chunks: the main pass starts mid-sequence from the corrected segment gradients) and
    automatic (tests/test_gdn_bwd_gpu.py run_ragged_case)."""
    run_ragged_case(4, 4, cp, state_v_first, f"fused bwd ragged cp_segment_chunks={cp} v_first={state_v_first}")


@pytest.mark.parametrize("state_v_first", [False, True], ids=["KV", "VK"])
@pytest.mark.parametrize("h0", [False, True], ids=["no-h0", "h0"])
def test_fused_bwd_state_options(h0, state_v_first):
    p = make_problem(1, 700, 4, 4, device=DEV)
    if not h0:
        p["initial_state"] = None
    run_case(p, f"fused bwd h0={h0} state_v_first={state_v_first}", state_v_first=state_v_first)


def test_fused_bwd_fp16_and_long():
    run_case(make_problem(1, 2000, 4, 4, dtype=torch.float16, device=DEV, gate="mild"), "fused bwd fp16 mild gate")
    run_case(make_problem(1, 16384, 16, 16, device=DEV), "fused bwd B=1 T=16384 H=HV=16 (automatic CP)")


def test_fused_bwd_matches_the_two_passes(monkeypatch):
    """The fused kernel and the two passes compute the same gradients up to bf16 rounding (another summation order,
    dVg rounded from dv): within the backward's tolerance of each other, not bitwise."""
    lengths = [3000, 1500, 64]
    cu = ragged_cu_seqlens(lengths, DEV)
    p = make_problem(1, sum(lengths), 8, 8, device=DEV, N=len(lengths))
    do = torch.randn(1, sum(lengths), 8, 128, device=DEV)
    dht = torch.randn(len(lengths), 8, 128, 128, device=DEV) / 8
    fused = flashqla_grads(p, do, dht, cu_seqlens=cu)
    monkeypatch.setenv("FLASHQLA_FUSED_BWD", "0")
    pair = flashqla_grads(p, do, dht, cu_seqlens=cu)
    for n in fused:
        assert rel_err(fused[n], pair[n].double()) <= 1e-2, n


def test_an_invalid_setting_is_an_error(monkeypatch):
    check_setting_rejected(monkeypatch, "FLASHQLA_FUSED_BWD", "yes", 2, 2)
