"""The public API and the op contract on CPU: the CPU op path (float64 reference rounded to the
output dtypes), every argument error, fake tensors, torch.library.opcheck."""

from __future__ import annotations

import pytest
import torch

import flashqla
from flashqla.reference import gdn_recurrent_ref, l2norm
from gdn_inputs import TOL, make_problem, ragged_cu_seqlens, rel_err


def test_cpu_path_matches_recurrence_varlen():
    lengths = [70, 1, 0, 65]
    cu = ragged_cu_seqlens(lengths, "cpu")
    p = make_problem(1, sum(lengths) + 9, 2, 4, N=len(lengths))
    o, ht = flashqla.chunk_gated_delta_rule(**p, output_final_state=True, cu_seqlens=cu)
    o_ref, ht_ref = gdn_recurrent_ref(**p, output_final_state=True, cu_seqlens=cu)
    assert o.dtype == torch.bfloat16 and ht.dtype == torch.float32
    assert rel_err(o, o_ref) <= TOL["o"] and rel_err(ht, ht_ref) <= 1e-6
    assert torch.equal(o[:, sum(lengths):], torch.zeros_like(o[:, sum(lengths):]))


def test_cpu_path_dense_l2norm_state_v_first_fp16():
    p = make_problem(2, 70, 1, 2, dtype=torch.float16, normalize=False)
    o, ht = flashqla.chunk_gated_delta_rule(**p, output_final_state=True, use_qk_l2norm_in_kernel=True,
                                            state_v_first=True)
    o_ref, ht_ref = gdn_recurrent_ref(l2norm(p["q"]), l2norm(p["k"]), p["v"], p["g"], p["beta"],
                                      initial_state=p["initial_state"], output_final_state=True, state_v_first=True)
    assert o.dtype == torch.float16
    assert rel_err(o, o_ref) <= TOL["o"] and rel_err(ht, ht_ref) <= 1e-6


def test_low_level_forward_returns_backward_inputs():
    p = make_problem(1, 100, 2, 4)
    out = flashqla.chunk_gated_delta_rule_fwd(**p)
    assert out.o.shape == (1, 100, 4, 128) and out.final_state.shape == (1, 4, 128, 128)
    assert out.g_cumsum.shape == (1, 100, 4) and out.g_cumsum.dtype == torch.float32
    assert out.A.shape == (1, 100, 4, 64) and out.A.dtype == torch.bfloat16
    # chunk-local cumsum restarts at token 64
    assert torch.allclose(out.g_cumsum[0, 64], p["g"][0, 64])
    assert torch.allclose(out.g_cumsum[0, 63], p["g"][0, :64].sum(0), rtol=1e-5, atol=1e-5)


def _base(**over):
    p = make_problem(1, 10, 2, 4)
    p.update(over)
    return p


ERRORS = [
    ("q dtype", dict(q=torch.zeros(1, 10, 2, 128)), TypeError, "`q` must be bfloat16 or float16"),
    ("k dtype", dict(k=torch.zeros(1, 10, 2, 128, dtype=torch.float16)), TypeError, "`k` must have q's dtype"),
    ("v dtype", dict(v=torch.zeros(1, 10, 4, 128, dtype=torch.float16)), TypeError, "`v` must have q's dtype"),
    ("q rank", dict(q=torch.zeros(10, 2, 128, dtype=torch.bfloat16)), ValueError, "`q` must have 4 dims"),
    ("v rank", dict(v=torch.zeros(10, 4, 128, dtype=torch.bfloat16)), ValueError, "`v` must have 4 dims"),
    ("head size K", dict(q=torch.zeros(1, 10, 2, 64, dtype=torch.bfloat16),
                         k=torch.zeros(1, 10, 2, 64, dtype=torch.bfloat16)), NotImplementedError, "head size K"),
    ("head size V", dict(v=torch.zeros(1, 10, 4, 64, dtype=torch.bfloat16)), NotImplementedError, "head size V"),
    ("HV multiple", dict(v=torch.zeros(1, 10, 3, 128, dtype=torch.bfloat16), g=torch.zeros(1, 10, 3),
                         beta=torch.zeros(1, 10, 3)), ValueError, "multiple of q/k's 2 heads"),
    ("k shape", dict(k=torch.zeros(1, 10, 1, 128, dtype=torch.bfloat16)), ValueError, "`k` must have q's shape"),
    ("g shape", dict(g=torch.zeros(1, 10, 2)), ValueError, "`g` must have shape"),
    ("beta shape", dict(beta=torch.zeros(1, 9, 4)), ValueError, "`beta` must have shape"),
    ("g dtype", dict(g=torch.zeros(1, 10, 4, dtype=torch.int32)), TypeError, "`g` must be a floating-point"),
    ("h0 shape", dict(initial_state=torch.zeros(1, 4, 128, 64)), ValueError, "`initial_state` must have shape"),
    ("h0 count", dict(initial_state=torch.zeros(2, 4, 128, 128)), ValueError, "`initial_state` must have shape"),
    ("h0 dtype", dict(initial_state=torch.zeros(1, 4, 128, 128, dtype=torch.int64)), TypeError, "`initial_state`"),
    ("q type", dict(q=[1, 2]), TypeError, "`q` must be a torch.Tensor"),
    ("scale type", dict(scale="x"), TypeError, "`scale`"),
]


@pytest.mark.parametrize("name,over,exc,msg", ERRORS, ids=[e[0] for e in ERRORS])
def test_argument_errors(name, over, exc, msg):
    p = _base(**{k: v for k, v in over.items() if k != "scale"})
    kw = {"scale": over["scale"]} if "scale" in over else {}
    before = {k: v.clone() for k, v in p.items() if isinstance(v, torch.Tensor)}
    with pytest.raises(exc, match=msg.replace("(", r"\(").replace(")", r"\)")):
        flashqla.chunk_gated_delta_rule(**p, **kw)
    for k, v in before.items():  # inputs are never modified, also on error
        assert torch.equal(p[k], v)


CU_ERRORS = [
    ("not from 0", [1, 5, 10], "must start at 0"),
    ("decreasing", [0, 6, 5, 10], "non-decreasing"),
    ("beyond T", [0, 5, 11], "beyond the 10 tokens"),
]


@pytest.mark.parametrize("name,cu,msg", CU_ERRORS, ids=[e[0] for e in CU_ERRORS])
@pytest.mark.parametrize("host_copy", [False, True], ids=["device", "cu_seqlens_cpu"])
def test_cu_seqlens_value_errors(name, cu, msg, host_copy):
    N = len(cu) - 1
    p = _base(initial_state=torch.zeros(N, 4, 128, 128))
    cu_t = torch.tensor(cu, dtype=torch.int32)
    kw = dict(cu_seqlens=cu_t, cu_seqlens_cpu=cu_t.clone() if host_copy else None)
    with pytest.raises(ValueError, match=msg):
        flashqla.chunk_gated_delta_rule(**p, **kw)


def test_cu_seqlens_structure_errors():
    p = make_problem(2, 10, 2, 4)
    with pytest.raises(ValueError, match="`cu_seqlens` requires batch size 1"):
        flashqla.chunk_gated_delta_rule(**p, cu_seqlens=torch.tensor([0, 10], dtype=torch.int32))
    p = _base()
    with pytest.raises(TypeError, match="`cu_seqlens` must be int32 or int64"):
        flashqla.chunk_gated_delta_rule(**p, cu_seqlens=torch.tensor([0.0, 10.0]))
    with pytest.raises(ValueError, match=r"`cu_seqlens` must have shape \[N \+ 1\]"):
        flashqla.chunk_gated_delta_rule(**p, cu_seqlens=torch.zeros(1, 2, dtype=torch.int32))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="mixed-device check needs a CUDA device")
def test_mixed_devices():
    p = _base()
    p["v"] = p["v"].cuda()
    with pytest.raises(ValueError, match="`v` is on cuda"):
        flashqla.chunk_gated_delta_rule(**p)


@pytest.mark.parametrize("kwargs,exc,msg", [
    (dict(use_beta_sigmoid_in_kernel=True), NotImplementedError, "use_beta_sigmoid_in_kernel"),
    (dict(allow_neg_eigval=True), NotImplementedError, "allow_neg_eigval"),
    (dict(cp_context=object()), NotImplementedError, "cp_context"),
    (dict(use_gate_in_kernel=True), NotImplementedError, "use_gate_in_kernel"),
    (dict(A_log=torch.zeros(4)), NotImplementedError, "A_log"),
    (dict(chunk_size=32), NotImplementedError, "chunk_size"),
    (dict(head_first=True), ValueError, "head_first"),
    (dict(bogus=1), TypeError, "unexpected keyword"),
])
def test_fla_keywords(kwargs, exc, msg):
    with pytest.raises(exc, match=msg):
        flashqla.chunk_gated_delta_rule(**_base(), **kwargs)


def test_fla_keywords_accepted():
    p = _base()
    o1, _ = flashqla.chunk_gated_delta_rule(**p)
    with pytest.warns(DeprecationWarning):
        o2, _ = flashqla.chunk_gated_delta_rule(**p, transpose_state_layout=False, chunk_size=64, auto_cp=False,
                                                chunk_indices=None, cu_seqlens_cpu=None)
    assert torch.equal(o1, o2)


def test_cpu_backward_matches_recurrence():
    """Autograd through the CPU op path (float64 reference, rounded) against autograd of the float64
    token recurrence, for all six gradients, with grouped heads, varlen, l2norm and state_v_first."""
    lengths = [70, 1, 0, 65]
    cu = ragged_cu_seqlens(lengths, "cpu")
    p = make_problem(1, sum(lengths) + 5, 1, 2, N=len(lengths), normalize=False)
    do = torch.randn(1, sum(lengths) + 5, 2, 128)
    dht = torch.randn(len(lengths), 2, 128, 128) / 8
    names = ("q", "k", "v", "g", "beta", "initial_state")

    def grads(fn, cast):
        leaves = {n: cast(p[n]).detach().requires_grad_() for n in names}
        o, ht = fn(leaves)
        ((o.double() * do.double()).sum() + (ht.double() * dht.double()).sum()).backward()
        return {n: leaves[n].grad for n in names}

    got = grads(lambda t: flashqla.chunk_gated_delta_rule(**t, output_final_state=True, cu_seqlens=cu,
                                                          use_qk_l2norm_in_kernel=True, state_v_first=True),
                lambda x: x)
    ref = grads(lambda t: gdn_recurrent_ref(l2norm(t["q"]), l2norm(t["k"]), t["v"], t["g"], t["beta"],
                                            initial_state=t["initial_state"], output_final_state=True,
                                            cu_seqlens=cu, state_v_first=True),
                lambda x: x.double())
    for n in names:
        assert got[n].dtype == p[n].dtype and got[n].shape == p[n].shape
        assert rel_err(got[n], ref[n]) <= 2e-2, n
    end = sum(lengths)
    for n in ("q", "k", "v", "g", "beta"):  # the padding tail gets no gradient
        assert torch.equal(got[n][:, end:], torch.zeros_like(got[n][:, end:])), n


def test_low_level_backward_shapes():
    p = make_problem(2, 70, 1, 2)
    fwd = flashqla.chunk_gated_delta_rule_fwd(**p)
    grads = flashqla.chunk_gated_delta_rule_bwd(p["q"], p["k"], p["v"], fwd.g_cumsum, p["beta"], fwd.A,
                                                torch.randn_like(fwd.o), initial_state=p["initial_state"])
    assert grads.dq.shape == p["q"].shape and grads.dk.dtype == torch.bfloat16
    assert grads.dv.shape == p["v"].shape and grads.dg.shape == (2, 70, 2) and grads.dg.dtype == torch.float32
    assert grads.dh0.shape == p["initial_state"].shape


def test_non_contiguous_inputs_work():
    p = make_problem(1, 50, 2, 4)
    q_nc = torch.stack([p["q"], p["q"]], dim=-1)[..., 0]
    assert not q_nc.is_contiguous() and torch.equal(q_nc, p["q"])
    o1, _ = flashqla.chunk_gated_delta_rule(**p)
    p["q"] = q_nc
    o2, _ = flashqla.chunk_gated_delta_rule(**p)
    assert torch.equal(o1, o2)


def _op_args(T=70, H=2, HV=4, N=2, h0=True):
    p = make_problem(1, T, H, HV, N=N, h0=h0)
    cu = ragged_cu_seqlens([30, T - 30 - 5], "cpu")
    return (p["q"], p["k"], p["v"], p["g"], p["beta"], 0.088, p["initial_state"], cu, True, False)


def test_fake_tensor_shapes():
    from torch._subclasses.fake_tensor import FakeTensorMode

    args = _op_args()
    with FakeTensorMode() as mode:
        fargs = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
        o, ht, gc, A, states = torch.ops.flashqla.gdn_fwd(*fargs)
    assert o.shape == (1, 70, 4, 128) and o.dtype == torch.bfloat16
    assert ht.shape == (2, 4, 128, 128) and ht.dtype == torch.float32
    assert gc.shape == (1, 70, 4) and gc.dtype == torch.float32
    assert A.shape == (1, 70, 4, 64) and A.dtype == torch.bfloat16
    assert states.shape == (0, 4, 128, 128) and states.dtype == torch.bfloat16


@pytest.mark.parametrize("h0", [True, False])
def test_opcheck_fwd(h0):
    args = _op_args(h0=h0)
    torch.library.opcheck(torch.ops.flashqla.gdn_fwd.default, args,
                          test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"))
    grad_args = tuple(a.detach().requires_grad_() if isinstance(a, torch.Tensor) and a.is_floating_point() else a
                      for a in args)
    torch.library.opcheck(torch.ops.flashqla.gdn_fwd.default, grad_args,
                          test_utils=("test_autograd_registration",))


def test_opcheck_bwd():
    q, k, v, g, beta, scale, h0, cu, _, vfirst = _op_args()
    o, ht, gc, A, _ = torch.ops.flashqla.gdn_fwd(q, k, v, g, beta, scale, h0, cu, True, vfirst)
    args = (q, k, v, gc, beta, A, torch.randn_like(o), torch.randn_like(ht), scale, h0, cu, vfirst)
    torch.library.opcheck(torch.ops.flashqla.gdn_bwd.default, args,
                          test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"))


@pytest.mark.parametrize("bad", [-2, 1 << 25, 1.5, True, "auto"])
def test_cp_segment_chunks_is_checked_on_cpu(bad):
    """The low-level API refuses a malformed context-parallelism setting before anything runs, naming it."""
    p = make_problem(1, 70, 2, 4)
    with pytest.raises((ValueError, TypeError), match="cp_segment_chunks"):
        flashqla.chunk_gated_delta_rule_fwd(p["q"], p["k"], p["v"], p["g"], p["beta"], cp_segment_chunks=bad)


@pytest.mark.parametrize("cp", [-1, 0, 1, 3])
def test_cp_segment_chunks_does_not_change_cpu_results(cp):
    """CPU tensors run the float64 reference whatever the setting (it only steers the CUDA kernels)."""
    p = make_problem(1, 70, 2, 4)
    want = flashqla.chunk_gated_delta_rule_fwd(p["q"], p["k"], p["v"], p["g"], p["beta"], cp_segment_chunks=0)
    got = flashqla.chunk_gated_delta_rule_fwd(p["q"], p["k"], p["v"], p["g"], p["beta"], cp_segment_chunks=cp)
    assert torch.equal(got.o, want.o) and torch.equal(got.final_state, want.final_state)


@pytest.mark.parametrize("how,want", [("dense", 96), ("cu_seqlens_cpu", 70), ("cu_seqlens only", 0)])
def test_max_seqlen_hint_reaches_the_ops(how, want, monkeypatch):
    """The Python API passes the host's knowledge of the longest sequence to both ops (docs/ops.md, max_seqlen):
    T of a dense batch, the longest of cu_seqlens_cpu, else 0 (it never reads cu_seqlens back)."""
    seen = {}
    for name in ("gdn_fwd", "gdn_bwd"):
        original = getattr(torch.ops.flashqla, name)

        def spy(*args, _name=name, _original=original):
            seen[_name] = args[-1]
            return _original(*args)
        monkeypatch.setattr(torch.ops.flashqla, name, spy)
    if how == "dense":
        p, cu, cpu = make_problem(2, 96, 1, 2), None, None
    else:
        p = make_problem(1, 100, 1, 2, N=3)
        cpu = torch.tensor([0, 20, 90, 100], dtype=torch.int32)
        cu, cpu = cpu.clone(), (cpu if how == "cu_seqlens_cpu" else None)
    fwd = flashqla.chunk_gated_delta_rule_fwd(p["q"], p["k"], p["v"], p["g"], p["beta"], cu_seqlens=cu,
                                              cu_seqlens_cpu=cpu)
    flashqla.chunk_gated_delta_rule_bwd(p["q"], p["k"], p["v"], fwd.g_cumsum, p["beta"], fwd.A,
                                        torch.randn_like(p["v"]), cu_seqlens=cu, cu_seqlens_cpu=cpu)
    assert seen == {"gdn_fwd": want, "gdn_bwd": want}
