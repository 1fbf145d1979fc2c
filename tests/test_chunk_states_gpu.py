"""The forward's chunk states kept for the backward, on the GPU (skipped elsewhere): the states the fused
forward stores (`output_chunk_states`) against the float64 reference at every owned chunk slot, and the
gradients with them (`save_chunk_states`: the backward skips its recompute) bitwise equal to the
gradients without (the recompute runs the same kernel with the same plan, so the states are the same bits),
also under context parallelism and torch.compile; each at the width the op picks and at both V-slice widths
forced (FLASHQLA_FWD_BLOCK_V: the 128-wide forward stores the states through the same storer warp)."""

from __future__ import annotations

import pytest
import torch

import flashqla
from flashqla.reference import chunk_fwd_ref, chunk_local_cumsum_ref, kkt_solve_ref
from gdn_inputs import has_wide_kernel, make_problem, ragged_cu_seqlens, rel_err

pytestmark = pytest.mark.gpu
DEV = "cuda"
NAMES = ("q", "k", "v", "g", "beta", "initial_state")
# bf16 states: 2^-8 relative rounding per element (about 3e-3 in L2), on top of the forward's bf16 GEMM
# operands (the forward's o and final state meet 1e-2, tests/gdn_inputs.py TOL)
STATE_TOL = 1e-2
CASES = {
    # (lengths, padding tail, cp_segment_chunks): partial chunks, an empty sequence, CP off / forced / automatic
    "ragged": ([130, 0, 64, 77], 5, 0),
    "ragged-cp2": ([700, 300, 1], 0, 2),
    "long-auto": ([8192], 0, -1),
}


# the V-slice width of the fused forward: the op's choice, or forced (128 exists in the sm90 family only)
WIDTHS = ["auto", "64", "128"]


def force_width(width, monkeypatch):
    if width == "auto":
        return
    if width == "128" and not has_wide_kernel():
        pytest.skip("the 128-wide forward is an sm90-family kernel (the kernel family here is not sm90)")
    monkeypatch.setenv("FLASHQLA_FWD_BLOCK_V", width)


def owned_slots(lengths):
    cu = ragged_cu_seqlens(lengths, "cpu").tolist()
    return [s // 64 + n + j for n, (s, e) in enumerate(zip(cu[:-1], cu[1:])) for j in range(len(range(s, e, 64)))]


def case_problem(case):
    """(lengths, cp_segment_chunks, T, inputs, cu_seqlens) of a CASES entry, fresh random inputs on the GPU."""
    lengths, tail, cp = CASES[case]
    T = sum(lengths) + tail
    return lengths, cp, T, make_problem(1, T, 2, 4, device=DEV, N=len(lengths)), ragged_cu_seqlens(lengths, DEV)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_forward_chunk_states_match_reference(case, width, monkeypatch):
    force_width(width, monkeypatch)
    lengths, cp, T, p, cu = case_problem(case)
    out = flashqla.chunk_gated_delta_rule_fwd(**p, cu_seqlens=cu, cp_segment_chunks=cp, output_chunk_states=True)
    slots = (T + 63) // 64 + len(lengths)
    assert out.chunk_states.shape == (slots, 4, 128, 128) and out.chunk_states.dtype == torch.bfloat16
    cpu = {n: t.cpu() for n, t in p.items()}
    gc = chunk_local_cumsum_ref(cpu["g"], cu.cpu())
    A = kkt_solve_ref(cpu["k"], cpu["beta"], cu.cpu())
    want = torch.zeros(slots, 4, 128, 128, dtype=torch.float64)
    chunk_fwd_ref(cpu["q"], cpu["k"], cpu["v"], gc, cpu["beta"], A, 128 ** -0.5, cpu["initial_state"], cu.cpu(),
                  chunk_states=want)
    idx = torch.tensor(owned_slots(lengths))
    err = rel_err(out.chunk_states.cpu()[idx], want[idx])
    assert err <= STATE_TOL, f"{case} BV={width}: chunk states rel err {err:.3e}"
    # o and the final state as without the flag (within the forward's tolerance: BV may differ)
    plain = flashqla.chunk_gated_delta_rule_fwd(**p, cu_seqlens=cu, cp_segment_chunks=cp)
    assert plain.chunk_states is None
    assert rel_err(out.o, plain.o) <= 1e-2 and rel_err(out.final_state, plain.final_state) <= 1e-2


def _grads(fn, p, cu, do, dht):
    leaves = {n: p[n].detach().clone().requires_grad_() for n in NAMES}
    o, ht = fn(leaves, cu)
    ((o.float() * do).sum() + (ht * dht).sum()).backward()
    return [leaves[n].grad for n in NAMES]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_gradients_with_kept_states_are_the_recomputed_ones(case, width, monkeypatch):
    force_width(width, monkeypatch)
    lengths, cp, T, p, cu = case_problem(case)
    do, dht = torch.randn(1, T, 4, 128, device=DEV), torch.randn(len(lengths), 4, 128, 128, device=DEV)

    def low_level(keep):
        fwd = flashqla.chunk_gated_delta_rule_fwd(**p, cu_seqlens=cu, cp_segment_chunks=cp, output_chunk_states=keep)
        return flashqla.chunk_gated_delta_rule_bwd(p["q"], p["k"], p["v"], fwd.g_cumsum, p["beta"], fwd.A, do, dht,
                                                   initial_state=p["initial_state"], cu_seqlens=cu,
                                                   cp_segment_chunks=cp, chunk_states=fwd.chunk_states)

    for name, a, b in zip(flashqla.GdnGrads._fields, low_level(False), low_level(True)):
        assert torch.equal(a, b), f"{case} BV={width}: {name} differs with the forward's chunk states"
    if cp == -1:  # the autograd path (automatic CP only)
        def layer(keep):
            return lambda x, c: flashqla.chunk_gated_delta_rule(**x, output_final_state=True, cu_seqlens=c,
                                                                save_chunk_states=keep)
        for name, a, b in zip(NAMES, _grads(layer(False), p, cu, do, dht), _grads(layer(True), p, cu, do, dht)):
            assert torch.equal(a, b), f"{case} BV={width}: d{name} differs with save_chunk_states"


def test_torch_compile_with_kept_states():
    lengths = [300, 1, 250]
    T = sum(lengths)
    p = make_problem(1, T, 2, 8, device=DEV, N=len(lengths))
    cu = ragged_cu_seqlens(lengths, DEV)
    do, dht = torch.randn(1, T, 8, 128, device=DEV), torch.randn(len(lengths), 8, 128, 128, device=DEV)

    def layer(x, c):
        return flashqla.chunk_gated_delta_rule(**x, output_final_state=True, cu_seqlens=c, save_chunk_states=True)

    compiled = torch.compile(layer, fullgraph=True, dynamic=True)
    for name, a, b in zip(NAMES, _grads(layer, p, cu, do, dht), _grads(compiled, p, cu, do, dht)):
        assert torch.equal(a, b), f"d{name}: compiled differs from eager"


def test_misaligned_chunk_states_are_rejected():
    p = make_problem(1, 70, 2, 4, device=DEV, N=2)
    cu = ragged_cu_seqlens([30, 35], DEV)
    o, ht, gc, A, states = torch.ops.flashqla.gdn_fwd(p["q"], p["k"], p["v"], p["g"], p["beta"], 0.088,
                                                      p["initial_state"], cu, True, False, -1, True)
    shifted = torch.empty(states.numel() + 1, dtype=states.dtype, device=DEV)[1:].view(states.shape)
    shifted.copy_(states)
    with pytest.raises(RuntimeError, match=r"flashqla::gdn_bwd: chunk_states must start at a 16-byte aligned address"):
        torch.ops.flashqla.gdn_bwd(p["q"], p["k"], p["v"], gc, p["beta"], A, torch.randn_like(o), torch.randn_like(ht),
                                   0.088, p["initial_state"], cu, False, -1, shifted)
