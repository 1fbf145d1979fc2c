"""GPU forward kernels against the float64 reference (GPU only; skipped elsewhere).

Outputs are NaN-poisoned before every kernel run (conftest sets FLASHQLA_POISON_OUTPUTS).
The reference runs in float64 on the GPU: the token recurrence up to 2048 tokens, the chunked
form beyond (the two agree to 1e-10, tests/test_reference.py).
"""

from __future__ import annotations

import pytest
import torch

import flashqla
from flashqla.reference import (chunk_local_cumsum_ref, gdn_chunk_ref, gdn_recurrent_ref, kkt_solve_ref,
                                l2norm)
from gdn_inputs import TOL, make_problem, ragged_cu_seqlens, record, rel_err

pytestmark = pytest.mark.gpu
DEV = "cuda"
HEADS = [(2, 8), (4, 4), (16, 32), (16, 48), (16, 64)]


def reference(p, cu_seqlens=None, state_v_first=False, l2=False):
    q, k = (l2norm(p["q"]), l2norm(p["k"])) if l2 else (p["q"], p["k"])
    tokens = q.shape[0] * q.shape[1]
    fn = gdn_recurrent_ref if tokens <= 2048 else gdn_chunk_ref
    return fn(q, k, p["v"], p["g"], p["beta"], initial_state=p["initial_state"], output_final_state=True,
              cu_seqlens=cu_seqlens, state_v_first=state_v_first)


def check(o, ht, o_ref, ht_ref, what):
    e_o = record("o", rel_err(o, o_ref), what)
    e_h = record("final_state", rel_err(ht, ht_ref), what)
    assert e_o <= TOL["o"], f"{what}: o rel err {e_o:.3e}"
    assert e_h <= TOL["final_state"], f"{what}: final_state rel err {e_h:.3e}"
    return e_o, e_h


@pytest.mark.parametrize("H,HV", HEADS, ids=[f"H{h}-HV{hv}" for h, hv in HEADS])
@pytest.mark.parametrize("T", [1, 63, 64, 65, 1000, 4096, 16384])
def test_dense_single_sequence(T, H, HV):
    p = make_problem(1, T, H, HV, device=DEV)
    o, ht = flashqla.chunk_gated_delta_rule(**p, output_final_state=True)
    assert o.shape == (1, T, HV, 128) and o.dtype == torch.bfloat16
    assert ht.shape == (1, HV, 128, 128) and ht.dtype == torch.float32
    check(o, ht, *reference(p), f"B=1 T={T} H={H} HV={HV}")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("H,HV", [(2, 8), (16, 48)], ids=["H2-HV8", "H16-HV48"])
@pytest.mark.parametrize("T", [1, 65, 1000])
@pytest.mark.parametrize("B", [2, 3])
def test_dense_batch(B, T, H, HV, dtype):
    p = make_problem(B, T, H, HV, dtype=dtype, device=DEV)
    o, ht = flashqla.chunk_gated_delta_rule(**p, output_final_state=True)
    assert o.dtype == dtype and o.shape == (B, T, HV, 128) and ht.shape == (B, HV, 128, 128)
    check(o, ht, *reference(p), f"B={B} T={T} H={H} HV={HV} {dtype}")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("l2", [False, True], ids=["raw-qk", "l2norm"])
@pytest.mark.parametrize("state_v_first", [False, True], ids=["KV", "VK"])
@pytest.mark.parametrize("h0", [False, True], ids=["no-h0", "h0"])
def test_options(h0, state_v_first, l2, dtype):
    p = make_problem(1, 1000, 2, 8, dtype=dtype, device=DEV, h0=h0, normalize=not l2)
    o, ht = flashqla.chunk_gated_delta_rule(**p, output_final_state=True, state_v_first=state_v_first,
                                            use_qk_l2norm_in_kernel=l2)
    check(o, ht, *reference(p, state_v_first=state_v_first, l2=l2),
          f"T=1000 H=2 HV=8 h0={h0} v_first={state_v_first} l2={l2} {dtype}")


VARLEN = {
    "ragged+tail": ([1, 0, 130, 64, 1000, 63], 77),
    "long+one": ([5000, 1], 0),
    "many-short": ([17, 1, 0, 0, 250, 3] * 4, 200),
    "one+long-tail": ([700], 300),
}


@pytest.mark.parametrize("state_v_first,h0", [(False, True), (True, True), (False, False)],
                         ids=["KV-h0", "VK-h0", "KV-no-h0"])
@pytest.mark.parametrize("H,HV", [(2, 8), (16, 32)], ids=["H2-HV8", "H16-HV32"])
@pytest.mark.parametrize("mix", list(VARLEN))
def test_varlen(mix, H, HV, state_v_first, h0):
    lengths, tail = VARLEN[mix]
    T = sum(lengths) + tail
    cu = ragged_cu_seqlens(lengths, DEV)
    p = make_problem(1, T, H, HV, device=DEV, h0=h0, N=len(lengths))
    o, ht = flashqla.chunk_gated_delta_rule(**p, output_final_state=True, cu_seqlens=cu,
                                            state_v_first=state_v_first)
    o_ref, ht_ref = reference(p, cu_seqlens=cu, state_v_first=state_v_first)
    check(o, ht, o_ref, ht_ref, f"varlen {mix} H={H} HV={HV} v_first={state_v_first} h0={h0}")
    end = sum(lengths)
    assert torch.equal(o[:, end:], torch.zeros_like(o[:, end:])), "padding tail of o must be exactly zero"
    for n, length in enumerate(lengths):
        if length == 0:  # an empty sequence hands its initial state through unchanged
            want = p["initial_state"][n] if h0 else torch.zeros_like(ht[n])
            assert torch.equal(ht[n], want.float())


def test_varlen_int64_offsets_and_cpu_copy():
    lengths = [300, 1, 77]
    cu = ragged_cu_seqlens(lengths, DEV).long()
    p = make_problem(1, sum(lengths), 4, 16, device=DEV, N=3)
    o, ht = flashqla.chunk_gated_delta_rule(**p, output_final_state=True, cu_seqlens=cu, cu_seqlens_cpu=cu.cpu())
    check(o, ht, *reference(p, cu_seqlens=cu), "int64 cu_seqlens")


def test_stages_match_reference():
    """g_cumsum and the ungated inverse A, stage by stage (points at the failing kernel)."""
    lengths = [130, 1, 64, 500]
    cu = ragged_cu_seqlens(lengths, DEV)
    p = make_problem(1, sum(lengths) + 40, 4, 8, device=DEV, N=4)
    out = flashqla.chunk_gated_delta_rule_fwd(**p, cu_seqlens=cu)
    gc_ref = chunk_local_cumsum_ref(p["g"], cu)
    a_ref = kkt_solve_ref(p["k"], p["beta"], cu)
    assert record("g_cumsum", rel_err(out.g_cumsum, gc_ref), "stages") <= TOL["g_cumsum"]
    assert record("A", rel_err(out.A, a_ref), "stages") <= TOL["A"]
    end = sum(lengths)
    assert torch.equal(out.A[:, end:], torch.zeros_like(out.A[:, end:]))
    assert torch.equal(out.g_cumsum[:, end:], torch.zeros_like(out.g_cumsum[:, end:]))


def test_mild_gate_many_heads():
    p = make_problem(1, 4096, 16, 64, device=DEV, gate="mild")
    o, ht = flashqla.chunk_gated_delta_rule(**p, output_final_state=True)
    check(o, ht, *reference(p), "mild gate")


def test_no_final_state_and_scale():
    p = make_problem(1, 333, 2, 4, device=DEV)
    o, ht = flashqla.chunk_gated_delta_rule(**p, scale=0.3)
    assert ht is None
    o_ref, _ = gdn_recurrent_ref(p["q"], p["k"], p["v"], p["g"], p["beta"], scale=0.3,
                                 initial_state=p["initial_state"])
    assert rel_err(o, o_ref) <= TOL["o"]
