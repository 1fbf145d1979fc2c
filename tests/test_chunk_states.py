"""The forward's chunk states kept for the backward (`save_chunk_states`, `output_chunk_states`,
gdn_bwd's `chunk_states`), on the CPU path: the states sit at their chunk slots and equal the token
recurrence's state at each chunk start; the arguments are checked by name; the fake implementations and
the autograd formula carry the extra output. The GPU side: tests/test_chunk_states_gpu.py."""

from __future__ import annotations

import pytest
import torch

import flashqla
from flashqla.reference import gdn_recurrent_ref
from gdn_inputs import make_problem, ragged_cu_seqlens, rel_err

NAMES = ("q", "k", "v", "g", "beta", "initial_state")
# bf16 states (the op returns them in q's dtype): 2^-8 relative rounding per element, about 3e-3 in L2
STATE_TOL = 1e-2


def expected_chunk_states(p, lengths, state_v_first):
    """{slot: [HV, K, V] float64}: the token recurrence's state at every chunk start of every sequence."""
    cu = ragged_cu_seqlens(lengths, "cpu").tolist()
    want = {}
    for n, (s, e) in enumerate(zip(cu[:-1], cu[1:])):
        h0 = p["initial_state"][n:n + 1]
        for j, c0 in enumerate(range(s, e, 64)):
            sl = slice(s, c0)
            if c0 == s:
                S = h0[0].double()
            else:
                _, S = gdn_recurrent_ref(p["q"][:, sl], p["k"][:, sl], p["v"][:, sl], p["g"][:, sl], p["beta"][:, sl],
                                         initial_state=h0, output_final_state=True, state_v_first=state_v_first)
                S = S[0]
            want[s // 64 + n + j] = S.transpose(-1, -2) if state_v_first else S
    return want


@pytest.mark.parametrize("state_v_first", [False, True])
def test_cpu_chunk_states_are_the_recurrence_at_chunk_starts(state_v_first):
    lengths = [130, 0, 64, 77]  # a partial last chunk, an empty sequence, one exact chunk; 5 padding tokens
    T = sum(lengths) + 5
    p = make_problem(1, T, 2, 4, N=len(lengths))
    cu = ragged_cu_seqlens(lengths, "cpu")
    out = flashqla.chunk_gated_delta_rule_fwd(**p, cu_seqlens=cu, state_v_first=state_v_first,
                                              output_chunk_states=True)
    assert out.chunk_states.shape == ((T + 63) // 64 + len(lengths), 4, 128, 128)
    assert out.chunk_states.dtype == p["q"].dtype
    want = expected_chunk_states(p, lengths, state_v_first)
    assert len(want) == 3 + 0 + 1 + 2
    for slot, S in want.items():
        err = rel_err(out.chunk_states[slot], S)
        assert err <= STATE_TOL, f"slot {slot}: rel err {err:.3e}"
    # without the flag: None, and the other outputs unchanged
    plain = flashqla.chunk_gated_delta_rule_fwd(**p, cu_seqlens=cu, state_v_first=state_v_first)
    assert plain.chunk_states is None
    for name in ("o", "final_state", "g_cumsum", "A"):
        assert torch.equal(getattr(plain, name), getattr(out, name)), name


def _grads(p, cu, do, dht, **kw):
    leaves = {n: p[n].detach().clone().requires_grad_() for n in NAMES}
    o, ht = flashqla.chunk_gated_delta_rule(**leaves, output_final_state=True, cu_seqlens=cu, **kw)
    ((o.float() * do).sum() + (ht * dht).sum()).backward()
    return [o, ht] + [leaves[n].grad for n in NAMES]


def test_cpu_save_chunk_states_gives_the_same_gradients():
    lengths = [70, 100]
    p = make_problem(1, sum(lengths), 2, 4, N=2)
    cu = ragged_cu_seqlens(lengths, "cpu")
    do, dht = torch.randn(1, sum(lengths), 4, 128), torch.randn(2, 4, 128, 128)
    want = _grads(p, cu, do, dht)
    got = _grads(p, cu, do, dht, save_chunk_states=True)
    for a, b in zip(want, got):
        assert torch.equal(a, b)


def test_low_level_backward_takes_the_forward_states():
    lengths = [70, 100]
    p = make_problem(1, sum(lengths), 2, 4, N=2)
    cu = ragged_cu_seqlens(lengths, "cpu")
    fwd = flashqla.chunk_gated_delta_rule_fwd(**p, cu_seqlens=cu, output_chunk_states=True)
    do = torch.randn_like(fwd.o)
    args = (p["q"], p["k"], p["v"], fwd.g_cumsum, p["beta"], fwd.A, do, None)
    kw = dict(initial_state=p["initial_state"], cu_seqlens=cu)
    want = flashqla.chunk_gated_delta_rule_bwd(*args, **kw)
    got = flashqla.chunk_gated_delta_rule_bwd(*args, **kw, chunk_states=fwd.chunk_states)
    for a, b in zip(want, got):
        assert torch.equal(a, b)
    with pytest.raises(ValueError, match=r"`chunk_states` must have shape \[ceil\(B T / 64\) \+ N, HV, K, V\] = "
                                         r"\[5, 4, 128, 128\]"):
        flashqla.chunk_gated_delta_rule_bwd(*args, **kw, chunk_states=fwd.chunk_states[1:])
    with pytest.raises(TypeError, match=r"`chunk_states` must have q's dtype torch.bfloat16"):
        flashqla.chunk_gated_delta_rule_bwd(*args, **kw, chunk_states=fwd.chunk_states.float())
    with pytest.raises(TypeError, match=r"`chunk_states` must be a torch.Tensor or None, got list"):
        flashqla.chunk_gated_delta_rule_bwd(*args, **kw, chunk_states=[])


def test_fake_chunk_states_shape():
    from torch._subclasses.fake_tensor import FakeTensorMode

    p = make_problem(1, 70, 2, 4, N=2)
    cu = ragged_cu_seqlens([30, 35], "cpu")
    args = (p["q"], p["k"], p["v"], p["g"], p["beta"], 0.088, p["initial_state"], cu, True, False, -1, True)
    with FakeTensorMode() as mode:
        fargs = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
        states = torch.ops.flashqla.gdn_fwd(*fargs)[4]
    assert states.shape == (2 + 2, 4, 128, 128) and states.dtype == torch.bfloat16


def test_opcheck_with_chunk_states():
    p = make_problem(1, 70, 2, 4, N=2)
    cu = ragged_cu_seqlens([30, 35], "cpu")
    fargs = (p["q"], p["k"], p["v"], p["g"], p["beta"], 0.088, p["initial_state"], cu, True, False, -1, True)
    torch.library.opcheck(torch.ops.flashqla.gdn_fwd.default, fargs,
                          test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"))
    o, ht, gc, A, states = torch.ops.flashqla.gdn_fwd(*fargs)
    bargs = (p["q"], p["k"], p["v"], gc, p["beta"], A, torch.randn_like(o), torch.randn_like(ht), 0.088,
             p["initial_state"], cu, False, -1, states)
    torch.library.opcheck(torch.ops.flashqla.gdn_bwd.default, bargs,
                          test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"))


@pytest.mark.parametrize("grad_mode, requires_grad, kept", [(True, True, True), (False, True, False),
                                                            (True, False, False)],
                         ids=["grad", "no_grad", "no leaf requires grad"])
def test_states_kept_only_when_a_gradient_is_needed(monkeypatch, grad_mode, requires_grad, kept):
    """save_chunk_states asks the forward for the states only when autograd will run the backward (without a
    gradient to compute the call goes to gdn_prefill, which keeps nothing: tests/test_prefill_cpu.py)."""
    import flashqla.api as api

    seen = []
    real = api.chunk_gated_delta_rule_fwd

    def spy(*args, **kw):
        seen.append(kw["output_chunk_states"])
        return real(*args, **kw)

    monkeypatch.setattr(api, "chunk_gated_delta_rule_fwd", spy)
    p = make_problem(1, 70, 2, 4, N=1)
    leaves = {n: p[n].detach().clone().requires_grad_(requires_grad) for n in NAMES}
    with torch.set_grad_enabled(grad_mode):
        flashqla.chunk_gated_delta_rule(**leaves, save_chunk_states=True)
    assert seen == ([True] if kept else [])
