"""flashqla::gdn_prefill, the forward for inference (o and the final state, nothing for a backward), on the CPU path:
its results are gdn_fwd's, its fake implementation matches (opcheck), chunk_gated_delta_rule calls it exactly when no
gradient is needed, its errors name it, and a backward through it fails loudly instead of returning no gradient."""

from __future__ import annotations

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import flashqla
from gdn_inputs import make_problem, ragged_cu_seqlens


def _op_args(T=70, H=2, HV=4, N=2, h0=True, state_v_first=False):
    p = make_problem(1, T, H, HV, N=N, h0=h0)
    cu = ragged_cu_seqlens([30, T - 30 - 5], "cpu")  # a padding tail of 5 tokens
    return (p["q"], p["k"], p["v"], p["g"], p["beta"], 0.088, p["initial_state"], cu, True, state_v_first)


@pytest.mark.parametrize("state_v_first", [False, True])
@pytest.mark.parametrize("h0", [True, False])
def test_prefill_is_gdn_fwd_without_intermediates(h0, state_v_first):
    args = _op_args(h0=h0, state_v_first=state_v_first)
    o, ht = torch.ops.flashqla.gdn_prefill(*args)
    o_fwd, ht_fwd, *_ = torch.ops.flashqla.gdn_fwd(*args)
    assert torch.equal(o, o_fwd) and torch.equal(ht, ht_fwd)
    o0, ht0 = torch.ops.flashqla.gdn_prefill(*args[:8], False, state_v_first)
    assert torch.equal(o0, o_fwd) and ht0.shape == (0, 4, 128, 128)


def test_opcheck_prefill():
    torch.library.opcheck(torch.ops.flashqla.gdn_prefill.default, _op_args(),
                          test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"))


class _Ops(TorchDispatchMode):
    """Records the flashqla ops a call dispatches."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if str(func).startswith("flashqla."):
            self.seen.append(str(func).split(".")[1])
        return func(*args, **(kwargs or {}))


def _api_inputs(requires_grad: bool):
    p = make_problem(2, 40, 2, 4, N=2)
    if requires_grad:
        p["v"] = p["v"].detach().requires_grad_()
    return p


@pytest.mark.parametrize("mode", ["no_grad", "no input requires grad", "grad"])
def test_api_calls_prefill_exactly_without_gradients(mode):
    p = _api_inputs(requires_grad=mode != "no input requires grad")
    ops = _Ops()
    with ops, torch.set_grad_enabled(mode == "grad"):
        o, ht = flashqla.chunk_gated_delta_rule(p["q"], p["k"], p["v"], p["g"], p["beta"],
                                                initial_state=p["initial_state"], output_final_state=True)
    assert ops.seen == (["gdn_fwd"] if mode == "grad" else ["gdn_prefill"]), ops.seen
    assert o.shape == (2, 40, 4, 128) and ht.shape == (2, 4, 128, 128)
    assert o.requires_grad == (mode == "grad")


def test_api_results_agree_with_and_without_gradients():
    p = _api_inputs(requires_grad=True)
    o, ht = flashqla.chunk_gated_delta_rule(p["q"], p["k"], p["v"], p["g"], p["beta"],
                                            initial_state=p["initial_state"], output_final_state=True)
    with torch.no_grad():
        o_inf, ht_inf = flashqla.chunk_gated_delta_rule(p["q"], p["k"], p["v"], p["g"], p["beta"],
                                                        initial_state=p["initial_state"], output_final_state=True)
    assert torch.equal(o.detach(), o_inf) and torch.equal(ht.detach(), ht_inf)


def test_prefill_errors_name_the_op_and_argument():
    args = list(_op_args())
    args[3] = args[3].double()  # g
    with pytest.raises(RuntimeError, match=r"flashqla::gdn_prefill.*\bg\b"):
        torch.ops.flashqla.gdn_prefill(*args)


def test_backward_through_prefill_fails_loudly():
    args = list(_op_args())
    args[2] = args[2].detach().requires_grad_()  # v
    o, ht = torch.ops.flashqla.gdn_prefill(*args)
    with pytest.raises(RuntimeError, match="gdn_prefill has no backward"):
        o.float().sum().backward()
