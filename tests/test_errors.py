"""Every class of bad input of the public API (docs/errors.md), one case each: the exception type, a
message naming the argument, the inputs unmodified, and the process still usable (a valid call right
after the error succeeds; on CUDA it also synchronizes, so a sticky device error would show).

Each case runs with CPU tensors everywhere and with CUDA tensors on an SM90 GPU (marked gpu).
"""

from __future__ import annotations

import math
import re

import pytest
import torch

import flashqla
from gdn_inputs import make_problem, ragged_cu_seqlens

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
T0, H0, HV0 = 10, 2, 4  # the base problem: [1, 10, 2, 128] q/k, 4 v-heads, one sequence


def base(d, T=T0, H=H0, HV=HV0, N=None, h0=True, B=1):
    return make_problem(B, T, H, HV, device=d, N=N, h0=h0)


def other_device(d: str) -> str:
    """A device that is not `d` and exists here (meta tensors carry no data: fine for the checks)."""
    return "meta" if d == "cpu" else "cpu"


def cu(d, values, dtype=torch.int32):
    return torch.tensor(values, dtype=dtype, device=d)


def bf16(*shape, d):
    return torch.zeros(*shape, dtype=torch.bfloat16, device=d)


# (id, build(device) -> keyword arguments of chunk_gated_delta_rule, exception, message regex)
CASES = [
    # ---- dtypes
    ("q float32", lambda d: {**base(d), "q": torch.zeros(1, T0, H0, 128, device=d)}, TypeError,
     r"`q` must be bfloat16 or float16, got torch.float32"),
    ("k dtype", lambda d: {**base(d), "k": torch.zeros(1, T0, H0, 128, dtype=torch.float16, device=d)}, TypeError,
     r"`k` must have q's dtype torch.bfloat16, got torch.float16"),
    ("v dtype", lambda d: {**base(d), "v": torch.zeros(1, T0, HV0, 128, dtype=torch.float16, device=d)}, TypeError,
     r"`v` must have q's dtype"),
    ("g int", lambda d: {**base(d), "g": torch.zeros(1, T0, HV0, dtype=torch.int32, device=d)}, TypeError,
     r"`g` must be a floating-point tensor, got torch.int32"),
    ("beta bool", lambda d: {**base(d), "beta": torch.ones(1, T0, HV0, dtype=torch.bool, device=d)}, TypeError,
     r"`beta` must be a floating-point tensor"),
    ("initial_state int", lambda d: {**base(d), "initial_state": torch.zeros(1, HV0, 128, 128, dtype=torch.int64,
                                                                              device=d)},
     TypeError, r"`initial_state` must be a floating-point tensor"),
    ("cu_seqlens float", lambda d: {**base(d), "cu_seqlens": cu(d, [0.0, 10.0], torch.float32)}, TypeError,
     r"`cu_seqlens` must be int32 or int64, got torch.float32"),
    ("cu_seqlens int16", lambda d: {**base(d), "cu_seqlens": cu(d, [0, 10], torch.int16)}, TypeError,
     r"`cu_seqlens` must be int32 or int64"),
    # ---- types
    ("q list", lambda d: {**base(d), "q": [[0.0]]}, TypeError, r"`q` must be a torch.Tensor, got list"),
    ("initial_state list", lambda d: {**base(d), "initial_state": [0.0]}, TypeError,
     r"`initial_state` must be a torch.Tensor"),
    ("cu_seqlens list", lambda d: {**base(d), "cu_seqlens": [0, 10]}, TypeError,
     r"`cu_seqlens` must be a torch.Tensor"),
    ("scale str", lambda d: {**base(d), "scale": "0.1"}, TypeError, r"`scale` must be a float or None, got str"),
    ("scale nan", lambda d: {**base(d), "scale": math.nan}, ValueError, r"`scale` must be finite, got nan"),
    ("scale inf", lambda d: {**base(d), "scale": math.inf}, ValueError, r"`scale` must be finite"),
    # ---- devices
    ("k device", lambda d: {**base(d), "k": base(other_device(d))["k"]}, ValueError, r"`k` is on .* but q is on"),
    ("g device", lambda d: {**base(d), "g": base(other_device(d))["g"]}, ValueError, r"`g` is on"),
    ("initial_state device", lambda d: {**base(d), "initial_state": base(other_device(d))["initial_state"]},
     ValueError, r"`initial_state` is on"),
    ("cu_seqlens device", lambda d: {**base(d), "cu_seqlens": cu(other_device(d), [0, 10])}, ValueError,
     r"`cu_seqlens` is on"),
    # ---- ranks
    ("q rank 3", lambda d: {**base(d), "q": bf16(T0, H0, 128, d=d)}, ValueError, r"`q` must have 4 dims"),
    ("k rank 5", lambda d: {**base(d), "k": bf16(1, 1, T0, H0, 128, d=d)}, ValueError, r"`k` must have 4 dims"),
    ("v rank 3", lambda d: {**base(d), "v": bf16(T0, HV0, 128, d=d)}, ValueError, r"`v` must have 4 dims"),
    ("g rank 2", lambda d: {**base(d), "g": torch.zeros(T0, HV0, device=d)}, ValueError,
     r"`g` must have shape \[B, T, HV\] = \[1, 10, 4\], got \[10, 4\]"),
    ("beta rank 4", lambda d: {**base(d), "beta": torch.zeros(1, T0, HV0, 1, device=d)}, ValueError,
     r"`beta` must have shape \[B, T, HV\]"),
    ("initial_state rank 3", lambda d: {**base(d), "initial_state": torch.zeros(HV0, 128, 128, device=d)},
     ValueError, r"`initial_state` must have shape \[N, HV, K, V\] = \[1, 4, 128, 128\]"),
    ("cu_seqlens rank 2", lambda d: {**base(d), "cu_seqlens": cu(d, [[0, 10]])}, ValueError,
     r"`cu_seqlens` must have shape \[N \+ 1\], got \[1, 2\]"),
    ("cu_seqlens rank 0", lambda d: {**base(d), "cu_seqlens": cu(d, 0)}, ValueError,
     r"`cu_seqlens` must have shape \[N \+ 1\], got \[\]"),
    ("cu_seqlens empty", lambda d: {**base(d), "cu_seqlens": cu(d, [])}, ValueError,
     r"`cu_seqlens` must have shape \[N \+ 1\], got \[0\]"),
    # ---- sizes
    ("head size K", lambda d: {**base(d), "q": bf16(1, T0, H0, 64, d=d), "k": bf16(1, T0, H0, 64, d=d)},
     NotImplementedError, r"`q` head size K must be 128 .*got 64"),
    ("head size V", lambda d: {**base(d), "v": bf16(1, T0, HV0, 64, d=d)}, NotImplementedError,
     r"`v` head size V must be 128 .*got 64"),
    ("k heads", lambda d: {**base(d), "k": bf16(1, T0, 1, 128, d=d)}, ValueError, r"`k` must have q's shape"),
    ("v tokens", lambda d: {**base(d), "v": bf16(1, T0 - 1, HV0, 128, d=d)}, ValueError,
     r"`v` must have shape \[B, T, HV, V\] with q's B = 1 and T = 10"),
    ("v batch", lambda d: {**base(d), "v": bf16(2, T0, HV0, 128, d=d)}, ValueError, r"`v` must have shape"),
    ("g heads", lambda d: {**base(d), "g": torch.zeros(1, T0, HV0 - 1, device=d)}, ValueError,
     r"`g` must have shape \[B, T, HV\] = \[1, 10, 4\], got \[1, 10, 3\]"),
    ("beta tokens", lambda d: {**base(d), "beta": torch.zeros(1, T0 + 1, HV0, device=d)}, ValueError,
     r"`beta` must have shape"),
    ("zero v-heads", lambda d: {**base(d, h0=False), "v": bf16(1, T0, 0, 128, d=d),
                                "g": torch.zeros(1, T0, 0, device=d), "beta": torch.zeros(1, T0, 0, device=d)},
     ValueError, r"`v` has 0 heads, which must be a positive multiple"),
    ("zero q-heads", lambda d: {**base(d), "q": bf16(1, T0, 0, 128, d=d), "k": bf16(1, T0, 0, 128, d=d)},
     ValueError, r"`v` has 4 heads, which must be a positive multiple of q/k's 0 heads"),
    # ---- head ratios
    ("HV % H != 0", lambda d: base(d, H=2, HV=3), ValueError, r"`v` has 3 heads, which must be a positive multiple "
                                                            r"of q/k's 2 heads"),
    ("HV < H", lambda d: base(d, H=4, HV=2), ValueError, r"`v` has 2 heads.*q/k's 4 heads"),
    # ---- cu_seqlens structure
    ("cu_seqlens with B = 2", lambda d: {**base(d, B=2, h0=False), "cu_seqlens": cu(d, [0, 10])}, ValueError,
     r"`cu_seqlens` requires batch size 1 .*got B = 2"),
    ("cu_seqlens_cpu alone", lambda d: {**base(d), "cu_seqlens_cpu": cu("cpu", [0, 10])}, ValueError,
     r"`cu_seqlens_cpu` was given without `cu_seqlens`"),
    ("cu_seqlens_cpu shape", lambda d: {**base(d), "cu_seqlens": cu(d, [0, 10]),
                                        "cu_seqlens_cpu": cu("cpu", [0, 5, 10])},
     ValueError, r"`cu_seqlens_cpu` must have cu_seqlens' shape \[2\], got \[3\]"),
    ("cu_seqlens_cpu dtype", lambda d: {**base(d), "cu_seqlens": cu(d, [0, 10]),
                                        "cu_seqlens_cpu": cu("cpu", [0.0, 10.0], torch.float64)},
     TypeError, r"`cu_seqlens_cpu` must be int32 or int64"),
    ("cu_seqlens_cpu device", lambda d: {**base(d), "cu_seqlens": cu(d, [0, 10]),
                                         "cu_seqlens_cpu": cu("meta" if d == "cpu" else d, [0, 10])},
     TypeError, r"`cu_seqlens_cpu` must be a CPU tensor"),
    # ---- initial_state
    ("initial_state count", lambda d: {**base(d, N=2), "cu_seqlens": cu(d, [0, 10])}, ValueError,
     r"`initial_state` must have shape \[N, HV, K, V\] = \[1, 4, 128, 128\] \(N = number of sequences\), "
     r"got \[2, 4, 128, 128\]"),
    ("initial_state K", lambda d: {**base(d), "initial_state": torch.zeros(1, HV0, 64, 128, device=d)}, ValueError,
     r"`initial_state` must have shape"),
    ("initial_state heads", lambda d: {**base(d), "initial_state": torch.zeros(1, HV0 // 2, 128, 128, device=d)},
     ValueError, r"`initial_state` must have shape"),
    ("initial_state V-first", lambda d: {**base(d), "state_v_first": True,
                                         "initial_state": torch.zeros(1, HV0, 128, 64, device=d)},
     ValueError, r"`initial_state` must have shape \[N, HV, V, K\]"),
]


# cu_seqlens values: checked from the device copy (one device-to-host copy) or from cu_seqlens_cpu
CU_VALUES = [
    ("unsorted", [0, 6, 5, 10], r"must be non-decreasing, got 6 then 5 at index 2"),
    ("negative", [0, -3, 10], r"must not be negative, got -3 at index 1"),
    ("first negative", [-1, 5, 10], r"must start at 0, got -1"),
    ("first not 0", [2, 5, 10], r"must start at 0, got 2"),
    ("last beyond T", [0, 5, 11], r"ends at 11, beyond the 10 tokens of q"),
    ("int64 beyond int32", [0, 2**32 + 5], r"ends at 4294967301, beyond the 10 tokens"),
]


def _snapshot(kwargs: dict) -> dict:
    return {n: t.clone() for n, t in kwargs.items() if isinstance(t, torch.Tensor) and t.device.type != "meta"}


def _assert_unmodified(kwargs: dict, before: dict) -> None:
    for n, t in before.items():
        assert kwargs[n].dtype == t.dtype and kwargs[n].shape == t.shape, n
        assert torch.equal(kwargs[n], t), f"{n} was modified"


def _assert_still_usable(d: str) -> None:
    """A valid call after the error works (and synchronizes the device)."""
    p = make_problem(1, 3, 1, 1, device=d)
    o, ht = flashqla.chunk_gated_delta_rule(**p, output_final_state=True)
    if d == "cuda":
        torch.cuda.synchronize()
    assert bool(torch.isfinite(o).all()) and bool(torch.isfinite(ht).all())


def expect_error(d: str, kwargs: dict, exc: type, match: str, fn=flashqla.chunk_gated_delta_rule) -> None:
    before = _snapshot(kwargs)
    with pytest.raises(exc, match=match) as info:
        fn(**kwargs)
    assert type(info.value) is exc, f"raised {type(info.value).__name__}, documented {exc.__name__}"
    assert "`" in str(info.value), "the message names the argument"
    _assert_unmodified(kwargs, before)
    _assert_still_usable(d)


@pytest.mark.parametrize("name,build,exc,match", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("d", DEVICES)
def test_bad_argument(d, name, build, exc, match):
    expect_error(d, build(d), exc, match)


@pytest.mark.parametrize("name,values,match", CU_VALUES, ids=[c[0] for c in CU_VALUES])
@pytest.mark.parametrize("host_copy", [False, True], ids=["device-copy", "cu_seqlens_cpu"])
@pytest.mark.parametrize("d", DEVICES)
def test_bad_cu_seqlens_values(d, name, values, match, host_copy):
    N = len(values) - 1
    dtype = torch.int64 if max(values) > 2**31 - 1 else torch.int32
    kwargs = {**base(d, N=N), "cu_seqlens": cu(d, values, dtype)}
    if host_copy:
        kwargs["cu_seqlens_cpu"] = cu("cpu", values, dtype)
    arg = "cu_seqlens_cpu" if host_copy else "cu_seqlens"
    expect_error(d, kwargs, ValueError, f"`{arg}` {match}")


def test_cu_seqlens_values_are_read_from_the_host_copy():
    """With cu_seqlens_cpu the device copy is not read: a good host copy passes (what the kernels then do
    with the device values is docs/errors.md's 'unchecked values')."""
    kwargs = {**base("cpu", N=2), "cu_seqlens": cu("cpu", [0, 4, 10]), "cu_seqlens_cpu": cu("cpu", [0, 4, 10])}
    o, _ = flashqla.chunk_gated_delta_rule(**kwargs)
    assert o.shape == (1, T0, HV0, 128)


def meta_problem(T: int, H: int, HV: int) -> dict:
    """Shapes and dtypes only (meta tensors: nothing is allocated or read)."""
    x = dict(q=(1, T, H, 128), k=(1, T, H, 128), v=(1, T, HV, 128))
    p = {n: torch.empty(*s, dtype=torch.bfloat16, device="meta") for n, s in x.items()}
    return {**p, "g": torch.empty(1, T, HV, device="meta"), "beta": torch.empty(1, T, HV, device="meta")}


def test_size_limits_checked_from_shapes():
    """More tokens, sequences or heads than the kernels' 32-bit token positions and block indices allow is
    refused from the shapes alone."""
    with pytest.raises(ValueError, match=r"`q` has 1073741824 tokens in 1 sequences with 1 v-heads: beyond"):
        flashqla.chunk_gated_delta_rule(**meta_problem(2**30, 1, 1))
    # many (empty) sequences with many heads overflow the sequential kernels' grid (2 N HV)
    N = 2**25
    with pytest.raises(ValueError, match=r"`q` has 64 tokens in 33554432 sequences with 32 v-heads: beyond"):
        flashqla.chunk_gated_delta_rule(**meta_problem(64, 32, 32),
                                        cu_seqlens=torch.empty(N + 1, dtype=torch.int32, device="meta"))


@pytest.mark.parametrize("d", DEVICES)
def test_low_level_backward_errors(d):
    """chunk_gated_delta_rule_bwd: the extra tensors (A, do, dht) and the g_cumsum name."""
    p = make_problem(1, 70, 2, 4, device=d, N=2)
    cu_ = ragged_cu_seqlens([30, 35], d)
    fwd = flashqla.chunk_gated_delta_rule_fwd(**p, cu_seqlens=cu_)
    good = dict(q=p["q"], k=p["k"], v=p["v"], g_cumsum=fwd.g_cumsum, beta=p["beta"], A=fwd.A,
                do=torch.randn_like(fwd.o), dht=torch.randn_like(fwd.final_state), initial_state=p["initial_state"],
                cu_seqlens=cu_)
    bad = [
        (dict(A=fwd.A[..., :32]), ValueError, r"`A` must have shape \[B, T, HV, 64\] = \[1, 70, 4, 64\]"),
        (dict(A=fwd.A.float()), TypeError, r"`A` must have q's dtype torch.bfloat16 \(the forward's output\)"),
        (dict(do=fwd.o[:, :69]), ValueError, r"`do` must have o's shape \[1, 70, 4, 128\]"),
        (dict(do=fwd.o.to(torch.int32)), TypeError, r"`do` must be a floating-point tensor"),
        (dict(dht=fwd.final_state[:1]), ValueError, r"`dht` must have the final state's shape \[N, HV, K, V\]"),
        (dict(dht=fwd.final_state.to(torch.int64)), TypeError, r"`dht` must be a floating-point tensor"),
        (dict(dht=0.0), TypeError, r"`dht` must be a torch.Tensor or None"),
        (dict(g_cumsum=fwd.g_cumsum[..., :2]), ValueError, r"`g_cumsum` must have shape \[B, T, HV\]"),
        (dict(do=torch.zeros(1, 70, 4, 128, device=other_device(d))), ValueError, r"`do` is on"),
    ]
    for change, exc, match in bad:
        expect_error(d, {**good, **change}, exc, match, flashqla.chunk_gated_delta_rule_bwd)


@pytest.mark.gpu
def test_unsupported_gpu(monkeypatch):
    """A GPU the build has no kernels for is refused before anything runs, naming the compiled archs."""
    p = make_problem(1, 70, 2, 4, device="cuda")
    before = _snapshot(p)
    archs = ", ".join(flashqla.build_manifest()["archs"])
    with monkeypatch.context() as m:
        m.setattr(torch.cuda, "get_device_capability", lambda device=None: (8, 0))
        with pytest.raises(NotImplementedError, match=rf"`q` is on cuda:\d+, a GPU of compute capability 8\.0; "
                                                      rf"this flashqla build has kernels for {re.escape(archs)} only"):
            flashqla.chunk_gated_delta_rule(**p)
    _assert_unmodified(p, before)
    _assert_still_usable("cuda")


def test_compile_does_not_read_cu_seqlens():
    """Under torch.compile(fullgraph=True) the offsets are not read back, even from cu_seqlens_cpu (that would
    break the graph); the result equals eager."""
    p = make_problem(1, 70, 2, 4, N=2)
    cu_ = ragged_cu_seqlens([30, 35], "cpu")

    def f(q, k, v, g, beta, h0, cu_seqlens, cu_seqlens_cpu):
        return flashqla.chunk_gated_delta_rule(q, k, v, g, beta, initial_state=h0, output_final_state=True,
                                               cu_seqlens=cu_seqlens, cu_seqlens_cpu=cu_seqlens_cpu)

    args = (p["q"], p["k"], p["v"], p["g"], p["beta"], p["initial_state"], cu_, cu_.clone())
    compiled = torch.compile(f, backend="eager", fullgraph=True)(*args)
    eager = f(*args)
    assert all(torch.equal(a, b) for a, b in zip(compiled, eager))
