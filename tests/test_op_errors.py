"""The op-level contract of torch.ops.flashqla.gdn_fwd / gdn_bwd (docs/ops.md, docs/errors.md): bad
arguments raise RuntimeError with the same message from the CPU implementation (python/flashqla/op_checks.py)
and the CUDA one (csrc/ops/gdn_common.cpp), naming the argument; the inputs stay unmodified and the
process usable. On CUDA, malformed cu_seqlens values are clamped on the device, never read back."""

from __future__ import annotations

import pytest
import torch

from gdn_inputs import make_problem, ragged_cu_seqlens

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
FWD_NAMES = ("q", "k", "v", "g", "beta", "scale", "initial_state", "cu_seqlens", "output_final_state",
             "state_v_first")
T, H, HV = 70, 2, 4


def fwd_args(d: str, h0: bool = True) -> dict:
    """Valid packed arguments: two sequences (30 + 35 tokens) and a 5-token padding tail."""
    p = make_problem(1, T, H, HV, device=d, N=2, h0=h0)
    return dict(q=p["q"], k=p["k"], v=p["v"], g=p["g"], beta=p["beta"], scale=0.088, initial_state=p["initial_state"],
                cu_seqlens=ragged_cu_seqlens([30, 35], d), output_final_state=True, state_v_first=False)


def bwd_args(d: str, cu_seqlens: torch.Tensor | None = None) -> dict:
    """Valid backward arguments: g_cumsum and A from the forward with the same offsets (chunk-local cumsums
    of other offsets are not a valid input: their gates do not decay within a chunk)."""
    a = fwd_args(d)
    if cu_seqlens is not None:
        a["cu_seqlens"] = cu_seqlens
    o, ht, gc, A, _ = torch.ops.flashqla.gdn_fwd(*a.values())
    return dict(q=a["q"], k=a["k"], v=a["v"], g_cumsum=gc, beta=a["beta"], A=A, do=torch.randn_like(o),
                dht=torch.randn_like(ht), scale=a["scale"], initial_state=a["initial_state"],
                cu_seqlens=a["cu_seqlens"], state_v_first=False)


def bf16(*shape, d):
    return torch.zeros(*shape, dtype=torch.bfloat16, device=d)


# (id, changes(device, valid arguments) -> changed arguments, message regex after "flashqla::gdn_fwd: ")
FWD_CASES = [
    ("q float32", lambda d, a: dict(q=a["q"].float()), r"q must be bfloat16 or float16, got float32"),
    ("k float16", lambda d, a: dict(k=a["k"].half()), r"k must be bfloat16, got float16"),
    ("g bfloat16", lambda d, a: dict(g=a["g"].bfloat16()), r"g must be float32, got bfloat16"),
    ("beta float64", lambda d, a: dict(beta=a["beta"].double()), r"beta must be float32, got float64"),
    ("cu_seqlens int64", lambda d, a: dict(cu_seqlens=a["cu_seqlens"].long()), r"cu_seqlens must be int32, got int64"),
    ("initial_state float64", lambda d, a: dict(initial_state=a["initial_state"].double()),
     r"initial_state must be float32, got float64"),
    ("q rank 3", lambda d, a: dict(q=a["q"][0]), r"q must have shape \[1, T, H, K\], got \[70, 2, 128\]"),
    ("batch 2", lambda d, a: {n: torch.cat([a[n], a[n]]) for n in ("q", "k", "v", "g", "beta")},
     r"q must have shape \[1, T, H, K\], got \[2, 70, 2, 128\]"),
    ("head size K", lambda d, a: dict(q=bf16(1, T, H, 64, d=d), k=bf16(1, T, H, 64, d=d)),
     r"head size K must be 128, got 64"),
    ("k shape", lambda d, a: dict(k=bf16(1, T, 1, 128, d=d)), r"k must have shape \[1, T, H, K\] \(as q\), got"),
    ("v tokens", lambda d, a: dict(v=bf16(1, T - 1, HV, 128, d=d)), r"v must have shape \[1, T, HV, V\], got"),
    ("head size V", lambda d, a: dict(v=bf16(1, T, HV, 64, d=d)), r"head size V must be 128, got 64"),
    ("HV % H", lambda d, a: dict(v=bf16(1, T, 3, 128, d=d), g=a["g"][..., :3].contiguous(),
                                 beta=a["beta"][..., :3].contiguous(), initial_state=None),
     r"the number of v heads \(3\) must be a positive multiple of the number of q/k heads \(2\)"),
    ("zero v-heads", lambda d, a: dict(v=bf16(1, T, 0, 128, d=d), g=a["g"][..., :0].contiguous(),
                                       beta=a["beta"][..., :0].contiguous(), initial_state=None),
     r"the number of v heads \(0\) must be a positive multiple"),
    ("g shape", lambda d, a: dict(g=a["g"][:, :, :2].contiguous()),
     r"g must have shape \[1, T, HV\], got \[1, 70, 2\]"),
    ("beta shape", lambda d, a: dict(beta=a["beta"][:, 1:].contiguous()), r"beta must have shape \[1, T, HV\]"),
    ("cu_seqlens rank 2", lambda d, a: dict(cu_seqlens=a["cu_seqlens"][None]),
     r"cu_seqlens must have shape \[N \+ 1\]"),
    ("initial_state shape", lambda d, a: dict(initial_state=a["initial_state"][:1].contiguous()),
     r"initial_state must have shape \[N, HV, K, V\], got \[1, 4, 128, 128\]"),
    ("initial_state V-first", lambda d, a: dict(initial_state=a["initial_state"][..., :64].contiguous(),
                                                state_v_first=True),
     r"initial_state must have shape \[N, HV, V, K\]"),
    ("v non-contiguous", lambda d, a: dict(v=a["v"].transpose(2, 3).contiguous().transpose(2, 3)),
     r"v must be contiguous"),
    ("too many sequences", lambda d, a: dict(q=bf16(1, 64, 32, 128, d=d), k=bf16(1, 64, 32, 128, d=d),
                                             v=bf16(1, 64, 32, 128, d=d), g=torch.zeros(1, 64, 32, device=d),
                                             beta=torch.zeros(1, 64, 32, device=d), initial_state=None,
                                             cu_seqlens=torch.zeros(2**25 + 1, dtype=torch.int32, device=d)),
     # CUDA caps the sequences first (one CTA row each on a grid dimension of 65535)
     {"cpu": r"too many tokens, sequences or heads for the kernels' 32-bit token positions and block indices "
             r"\(T = 64, N = 33554432, HV = 32\)",
      "cuda": r"cu_seqlens holds 33554432 sequences; the CUDA kernels take at most 65534 per call "
              r"\(split the batch\)"}),
    # the planning hint (positional after cp_segment_chunks and output_chunk_states)
    ("max_seqlen negative", lambda d, a: dict(cp_segment_chunks=-1, output_chunk_states=False, max_seqlen=-1),
     r"max_seqlen must be 0 \(unknown\) or the longest sequence's length in \[1, T = 70\], got -1"),
    ("max_seqlen beyond T", lambda d, a: dict(cp_segment_chunks=-1, output_chunk_states=False, max_seqlen=71),
     r"max_seqlen must be 0 \(unknown\) or the longest sequence's length in \[1, T = 70\], got 71"),
]

BWD_CASES = [
    ("g_cumsum bfloat16", lambda d, a: dict(g_cumsum=a["g_cumsum"].bfloat16()), r"g_cumsum must be float32"),
    ("A shape", lambda d, a: dict(A=a["A"][..., :32].contiguous()), r"A must have shape \[1, T, HV, 64\]"),
    ("A float32", lambda d, a: dict(A=a["A"].float()), r"A must be bfloat16, got float32"),
    ("do float32", lambda d, a: dict(do=a["do"].float()), r"do must be bfloat16, got float32"),
    ("do shape", lambda d, a: dict(do=a["do"][:, :, :2].contiguous()), r"do must have shape \[1, T, HV, V\] \(as v\)"),
    ("dht shape", lambda d, a: dict(dht=a["dht"][:1].contiguous()), r"dht must have shape \[N, HV, K, V\]"),
    ("dht float64", lambda d, a: dict(dht=a["dht"].double()), r"dht must be float32, got float64"),
    # the forward's chunk states: ceil(70 / 64) + 2 = 4 slots
    ("chunk_states shape", lambda d, a: dict(cp_segment_chunks=-1, chunk_states=bf16(3, HV, 128, 128, d=d)),
     r"chunk_states must have shape \[ceil\(T / 64\) \+ N, HV, K, V\] \(gdn_fwd's output_chunk_states\), "
     r"got \[3, 4, 128, 128\]"),
    ("chunk_states float32", lambda d, a: dict(cp_segment_chunks=-1,
                                               chunk_states=torch.zeros(4, HV, 128, 128, device=d)),
     r"chunk_states must be bfloat16, got float32"),
    ("chunk_states non-contiguous", lambda d, a: dict(cp_segment_chunks=-1,
                                                      chunk_states=bf16(4, HV, 128, 128, d=d).transpose(2, 3)),
     r"chunk_states must be contiguous"),
    ("max_seqlen beyond T", lambda d, a: dict(cp_segment_chunks=-1, chunk_states=None, max_seqlen=71),
     r"max_seqlen must be 0 \(unknown\) or the longest sequence's length in \[1, T = 70\], got 71"),
]


def _snapshot(args: dict) -> dict:
    return {n: t.clone() for n, t in args.items() if isinstance(t, torch.Tensor)}


def expect_op_error(d, op, args: dict, op_name: str, match: str | dict) -> None:
    """`match`: the message pattern, or one per device type where the checks differ."""
    if isinstance(match, dict):
        match = match[d]
    before = _snapshot(args)
    with pytest.raises(RuntimeError, match=rf"flashqla::{op_name}: {match}"):
        op(*args.values())
    for n, t in before.items():
        assert torch.equal(args[n], t), f"{n} was modified"
    p = make_problem(1, 3, 1, 1, device=d, h0=False)  # still usable
    o, *_ = torch.ops.flashqla.gdn_fwd(p["q"], p["k"], p["v"], p["g"], p["beta"], 0.1, None,
                                       ragged_cu_seqlens([3], d), True, False)
    if d == "cuda":
        torch.cuda.synchronize()
    assert bool(torch.isfinite(o).all())


@pytest.mark.parametrize("name,change,match", FWD_CASES, ids=[c[0] for c in FWD_CASES])
@pytest.mark.parametrize("d", DEVICES)
def test_gdn_fwd_bad_argument(d, name, change, match):
    a = fwd_args(d)
    expect_op_error(d, torch.ops.flashqla.gdn_fwd, {**a, **change(d, a)}, "gdn_fwd", match)


@pytest.mark.parametrize("name,change,match", BWD_CASES, ids=[c[0] for c in BWD_CASES])
@pytest.mark.parametrize("d", DEVICES)
def test_gdn_bwd_bad_argument(d, name, change, match):
    a = bwd_args(d)
    expect_op_error(d, torch.ops.flashqla.gdn_bwd, {**a, **change(d, a)}, "gdn_bwd", match)


@pytest.mark.parametrize("values", [[1, 30, 65], [0, 40, 20, 65], [0, 30, 71], [-3, 30, 65]],
                         ids=["first not 0", "decreasing", "beyond T", "negative"])
def test_cpu_op_rejects_malformed_offsets(values):
    """The CPU op reads the offsets (free on the host) and refuses malformed ones."""
    a = fwd_args("cpu")
    a["cu_seqlens"] = torch.tensor(values, dtype=torch.int32)
    a["initial_state"] = torch.zeros(len(values) - 1, HV, 128, 128)
    expect_op_error("cpu", torch.ops.flashqla.gdn_fwd, a, "gdn_fwd",
                    r"cu_seqlens must start at 0, never decrease and end at most at T = 70")


@pytest.mark.gpu
def test_cuda_op_device_requirements():
    """CUDA-only requirements: every tensor on q's GPU, 16-byte aligned q/k/v (TMA)."""
    a = fwd_args("cuda")
    expect_op_error("cuda", torch.ops.flashqla.gdn_fwd, {**a, "k": a["k"].cpu()}, "gdn_fwd",
                    r"k must be a CUDA tensor")
    flat = torch.zeros(a["q"].numel() + 1, dtype=torch.bfloat16, device="cuda")
    misaligned = flat[1:].view(a["q"].shape)  # contiguous, 2 bytes past an aligned address
    misaligned.copy_(a["q"])
    expect_op_error("cuda", torch.ops.flashqla.gdn_fwd, {**a, "q": misaligned}, "gdn_fwd",
                    r"q must start at a 16-byte aligned address")


@pytest.mark.gpu
def test_cuda_sequence_count_limit():
    """More sequences than the kernels' grid rows (65534 per call): a clear error naming cu_seqlens from the
    API (ValueError) and from the op (RuntimeError), nothing launched; 65534 sequences still run."""
    import flashqla

    for n, ok in ((flashqla.validate.MAX_CUDA_SEQS + 1, False), (flashqla.validate.MAX_CUDA_SEQS, True)):
        p = make_problem(1, n, 1, 1, device="cuda", N=n, h0=False)
        cu = torch.arange(n + 1, dtype=torch.int32, device="cuda")  # n one-token sequences
        args = dict(q=p["q"], k=p["k"], v=p["v"], g=p["g"], beta=p["beta"], scale=0.088, initial_state=None,
                    cu_seqlens=cu, output_final_state=False, state_v_first=False)
        if ok:
            o = torch.ops.flashqla.gdn_fwd(*args.values())[0]
            assert bool(torch.isfinite(o).all())
            continue
        with pytest.raises(ValueError, match=r"`cu_seqlens` holds 65535 sequences; the CUDA kernels take at most"):
            flashqla.chunk_gated_delta_rule(p["q"], p["k"], p["v"], p["g"], p["beta"], cu_seqlens=cu)
        expect_op_error("cuda", torch.ops.flashqla.gdn_fwd, args, "gdn_fwd",
                        r"cu_seqlens holds 65535 sequences; the CUDA kernels take at most 65534 per call")


CLAMP_CASES = [([-5, 20, 70], [0, 20, 70]), ([0, 20, 10**6], [0, 20, 70]), ([0, 20, 2**31 - 1], [0, 20, 70])]
CLAMP_IDS = ["negative start", "end beyond T", "end at int32 max"]


@pytest.mark.gpu
@pytest.mark.parametrize("values,clamped", CLAMP_CASES, ids=CLAMP_IDS)
def test_cuda_op_clamps_offsets(values, clamped):
    """The CUDA op never reads cu_seqlens back: values outside [0, T] are clamped on the device, which gives
    exactly the forward of the clamped offsets."""
    a = fwd_args("cuda")
    bad = {**a, "cu_seqlens": torch.tensor(values, dtype=torch.int32, device="cuda")}
    good = {**a, "cu_seqlens": torch.tensor(clamped, dtype=torch.int32, device="cuda")}
    outs = ("o", "final_state", "g_cumsum", "A", "chunk_states")
    for name, got, want in zip(outs, torch.ops.flashqla.gdn_fwd(*bad.values()),
                               torch.ops.flashqla.gdn_fwd(*good.values())):
        assert torch.equal(got, want), f"gdn_fwd {name}: {(got != want).sum().item()} elements differ"


@pytest.mark.gpu
@pytest.mark.parametrize("values,clamped", CLAMP_CASES, ids=CLAMP_IDS)
def test_cuda_bwd_clamps_offsets(values, clamped):
    """The same for the backward: every gradient finite and bitwise equal to the clamped offsets' gradients.
    (g_cumsum and A come from the forward with the clamped offsets: with the cumsums of other offsets the
    gates grow within a chunk and the gradients overflow to NaN in both runs, which is what an earlier
    version of this test compared.)"""
    bad = torch.tensor(values, dtype=torch.int32, device="cuda")
    good = torch.tensor(clamped, dtype=torch.int32, device="cuda")
    b = bwd_args("cuda", cu_seqlens=good)
    grads_bad = torch.ops.flashqla.gdn_bwd(*{**b, "cu_seqlens": bad}.values())
    grads_good = torch.ops.flashqla.gdn_bwd(*b.values())
    for name, got, want in zip(("dq", "dk", "dv", "dg", "dbeta", "dh0"), grads_bad, grads_good):
        assert bool(torch.isfinite(want).all()), f"gdn_bwd {name}: not finite with valid offsets"
        assert torch.equal(got, want), f"gdn_bwd {name}: {(got != want).sum().item()} elements differ"


@pytest.mark.gpu
@pytest.mark.parametrize("values", [[0, 40, 20, 70], [30, 10, 70], [0, 70, 0, 70]],
                         ids=["decreasing", "start after end", "repeated range"])
def test_cuda_op_survives_unsorted_offsets(values):
    """Unsorted offsets give overlapping sequences (unspecified results) but never an out-of-bounds access
    or a hang: the device stays usable (scripts/sanitize.sh runs this under compute-sanitizer memcheck)."""
    a = fwd_args("cuda")
    N = len(values) - 1
    args = {**a, "cu_seqlens": torch.tensor(values, dtype=torch.int32, device="cuda"),
            "initial_state": torch.zeros(N, HV, 128, 128, device="cuda")}
    out = torch.ops.flashqla.gdn_fwd(*args.values())
    b = dict(q=args["q"], k=args["k"], v=args["v"], g_cumsum=out[2], beta=args["beta"], A=out[3],
             do=torch.randn_like(out[0]), dht=torch.randn_like(out[1]), scale=args["scale"],
             initial_state=args["initial_state"], cu_seqlens=args["cu_seqlens"], state_v_first=False)
    torch.ops.flashqla.gdn_bwd(*b.values())
    torch.cuda.synchronize()
    o, *_ = torch.ops.flashqla.gdn_fwd(*a.values())
    torch.cuda.synchronize()
    assert bool(torch.isfinite(o).all())
