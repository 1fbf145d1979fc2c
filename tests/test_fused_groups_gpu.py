"""The fused backward at two v-heads per qk-head (by default) and three and four (FLASHQLA_FUSED_GROUPS=1):
tilelang_src/sm90/gdn_bwd_fused.py with cluster_sum, the group's CTAs of a segment row one cluster, dq and dk summed
through distributed shared memory, on the GPU (skipped elsewhere, and where the build has no such variant): that it
is what ran, and only where it should; its gradients against float64 with the backward's tolerance over single
sequences with partial chunks, a ragged batch with an empty sequence and a padding tail (exactly zero gradients there),
context parallelism forced and automatic, the state options and fp16; that it agrees with the two passes and repeats
bit for bit; and that an invalid setting is an error."""

from __future__ import annotations

import pytest
import torch

from gdn_inputs import make_problem, ragged_cu_seqlens, rel_err
from test_gdn_bwd_gpu import (DEV, check_setting_rejected, flashqla_grads, has_fused_kernel, kernels_of_a_backward,
                              run_case, run_ragged_case)

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def groups_on(monkeypatch):
    if not has_fused_kernel(2):
        pytest.skip("this build has no fused backward for two v-heads per qk-head on this GPU's family (sm90 only)")
    monkeypatch.setenv("FLASHQLA_FUSED_BWD", "1")
    monkeypatch.setenv("FLASHQLA_FUSED_GROUPS", "1")


def fused_ran(names: set, group: int) -> bool:
    """The cluster kernel of that group ran and the two passes' chunk kernel did not (or the other way round: False)."""
    fused = any("gdn_bwd_fused" in n and f"gmax{group}" in n for n in names)
    chunk = any("gdn_bwd_chunk" in n for n in names)
    assert fused != chunk, names
    return fused


def test_the_cluster_kernel_runs_where_it_should(monkeypatch):
    """By default at two v-heads per qk-head only; with FLASHQLA_FUSED_GROUPS=1 at every group the build has; with 0
    nowhere; with FLASHQLA_FUSED_BWD=0 nowhere either."""
    two = make_problem(1, 1000, 4, 8, device=DEV)
    four = make_problem(1, 1000, 2, 8, device=DEV)
    assert fused_ran(kernels_of_a_backward(two), 2)
    assert fused_ran(kernels_of_a_backward(four), 4) == has_fused_kernel(4)
    monkeypatch.delenv("FLASHQLA_FUSED_GROUPS")
    assert fused_ran(kernels_of_a_backward(two), 2)
    assert not fused_ran(kernels_of_a_backward(four), 4)
    monkeypatch.setenv("FLASHQLA_FUSED_GROUPS", "0")
    assert not fused_ran(kernels_of_a_backward(two), 2)
    monkeypatch.setenv("FLASHQLA_FUSED_GROUPS", "1")
    monkeypatch.setenv("FLASHQLA_FUSED_BWD", "0")  # the fused backward off turns its groups off too
    assert not fused_ran(kernels_of_a_backward(two), 2)


def test_a_group_without_a_variant_keeps_the_two_passes():
    group = 8
    if has_fused_kernel(group):
        pytest.skip("this build has a fused backward for eight v-heads per qk-head")
    assert not fused_ran(kernels_of_a_backward(make_problem(1, 1000, 1, group, device=DEV)), group)


@pytest.mark.parametrize("H", [1, 2, 16])
@pytest.mark.parametrize("T", [1, 63, 64, 65, 1000, 4096])
def test_cluster_bwd_single_sequence(T, H):
    run_case(make_problem(1, T, H, 2 * H, device=DEV), f"cluster bwd B=1 T={T} H={H} HV={2 * H}")


@pytest.mark.parametrize("group", [3, 4])
@pytest.mark.parametrize("T", [65, 1000, 4096])
def test_cluster_bwd_larger_groups(T, group):
    """Three and four v-heads per qk-head (rank 0 adds two or three staged dq parts, rank G - 1 the dk parts), where
    the build has those variants: the kernel ran, and the gradients against float64."""
    if not has_fused_kernel(group):
        pytest.skip(f"this build has no fused backward for {group} v-heads per qk-head")
    p = make_problem(1, T, 2, 2 * group, device=DEV)
    assert fused_ran(kernels_of_a_backward(p), group)
    run_case(p, f"cluster bwd B=1 T={T} H=2 HV={2 * group}")


@pytest.mark.parametrize("cp", [0, 1, 3, -1], ids=["cp-off", "cp1", "cp3", "cp-auto"])
def test_cluster_bwd_ragged_with_tail(cp):
    """The group's CTAs of a row walk the same chunks, with segments forced and automatic (tests/test_gdn_bwd_gpu.py
    run_ragged_case)."""
    run_ragged_case(2, 4, cp, False, f"cluster bwd ragged cp_segment_chunks={cp}")


@pytest.mark.parametrize("state_v_first", [False, True], ids=["KV", "VK"])
@pytest.mark.parametrize("h0", [False, True], ids=["no-h0", "h0"])
def test_cluster_bwd_state_options(h0, state_v_first):
    p = make_problem(1, 700, 2, 4, device=DEV)
    if not h0:
        p["initial_state"] = None
    run_case(p, f"cluster bwd h0={h0} state_v_first={state_v_first}", state_v_first=state_v_first)


def test_cluster_bwd_fp16_batch_and_long():
    run_case(make_problem(1, 2000, 2, 4, dtype=torch.float16, device=DEV, gate="mild"), "cluster bwd fp16 mild gate")
    run_case(make_problem(3, 1000, 4, 8, device=DEV), "cluster bwd B=3 T=1000 H=4 HV=8")
    run_case(make_problem(1, 16384, 16, 32, device=DEV), "cluster bwd B=1 T=16384 H=16 HV=32 (automatic CP)")


def test_cluster_bwd_matches_the_two_passes_and_repeats(monkeypatch):
    """Within the backward's tolerance of the two passes (dq and dk summed from bf16 parts instead of in fp32), and the
    same bits on a second run (each sum is the receiver's part plus the others' in rank order)."""
    lengths = [3000, 1500, 64]
    cu = ragged_cu_seqlens(lengths, DEV)
    p = make_problem(1, sum(lengths), 4, 8, device=DEV, N=len(lengths))
    do = torch.randn(1, sum(lengths), 8, 128, device=DEV)
    dht = torch.randn(len(lengths), 8, 128, 128, device=DEV) / 8
    cluster = flashqla_grads(p, do, dht, cu_seqlens=cu)
    again = flashqla_grads(p, do, dht, cu_seqlens=cu)
    for n in cluster:
        assert torch.equal(cluster[n], again[n]), n
    monkeypatch.setenv("FLASHQLA_FUSED_GROUPS", "0")
    pair = flashqla_grads(p, do, dht, cu_seqlens=cu)
    for n in cluster:
        assert rel_err(cluster[n], pair[n].double()) <= 1e-2, n


def test_an_invalid_setting_is_an_error(monkeypatch):
    check_setting_rejected(monkeypatch, "FLASHQLA_FUSED_GROUPS", "2", 2, 4)
