#!/usr/bin/env python3
"""Where the time goes in the SM90 kernels: time source variants of tilelang_src/sm90/gdn_fwd.py and
chunk_prep.py (and, base against cur only, gdn_bwd_chunk.py and gdn_bwd_dh.py), compiled with TileLang's
JIT on the GPU machine.

Variants: `base` (the kernel file of --base-dir, default this tree: to compare a change with the code
before it), `cur` (this tree), `fix` (this tree with the experimental text edits below; each edit must
match exactly once, so a stale edit fails loudly) and `ablate` (`fix` plus a run-time bit mask that
skips one piece of work per bit; the results are wrong then, only the time counts, so one compile
measures every piece: a piece whose removal does not shorten the run is not on the critical path).
An ablation never skips a barrier operation (that would hang the kernel).

    PYTHONPATH=<site with tilelang> python benchmarks/ablate.py [--kernels fwd prep bwdc bwddh]
        [--heads 2,8 16,64] [--tokens 8192] [--variants base cur fix ablate] [--base-dir DIR] [--no-o]

Prints the time per chunk (forward and state gradient: kernel time / chunks per CTA) or per launch (chunk
prep, chunk gradient) for every (variant, mask, shape), and the largest difference of the output from the
first variant's run on the same inputs (every output for the chunk gradient: dv, dq, dk, dg, dbeta; outputs
are poisoned with NaN before each variant runs).
Results and their reading: docs/fwd_profile.md.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import importlib
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "tilelang_src"

# experimental edits of gdn_fwd.py for the `fix` variant (none now; measurements in docs/fwd_profile.md)
FWD_FIX: list[tuple[str, str]] = []

# bit -> (name, the statement block to guard); the guard is `if (ablate // bit) % 2 == 0:`. The end marker is the
# first match after the start marker. Blocks of the current program (its BV = 64 and BV = 128 variants alike)
FWD_ABLATIONS = {
    1: ("WG0: S~ to shared", "                    T.copy(s_frag, st_s[i % NST, :, :])\n",
        "                    T.fence_proxy_async()\n                    T.barrier_arrive(st_ready"),
    2: ("WG0: S += X^T W", "                    # S += X^T W\n", "                    if STAGE_OW:\n"),
    4: ("WG1: X = A^T K, scaled", "                    # X = diag(r * beta) A^T K", "                    # X's buffer"),
    8: ("WG1: X to shared", "                    T.copy(x_frag, x_s[i % NST, :, :])\n",
        "                    T.barrier_wait(st_ready[i % NST]"),
    16: ("WG1: U = K S~", "                    # U = K S~\n", "                    T.barrier_arrive(st_free[i % NST])\n"),
    32: ("WG1: W = V - gamma U", "                    # W in registers, then one copy",
         "                    T.fence_proxy_async()\n                    T.barrier_arrive(w_ready"),
    64: ("WG2: o store", "                    if emit_o:\n                        if STAGE_O:",
         "                # the last sequence's last segment"),
    128: ("WG2: O = Q S~", "                        # O = scale * gamma * (Q S~)\n",
          "                    T.barrier_arrive(st_free[i % NST])\n"),
    256: ("WG2: O += Z W", "                        # O += Z W\n",
          "                    if z_from_ring:\n                        if emit_o:"),
    512: ("loads: g, beta", "                        load_gate_beta(", "                        T.barrier_arrive(full[i % 2])\n"),
}
# measured on the H200: docs/fwd_profile.md

# the state gradient's pieces (gdn_bwd_dh.py), the work that a warm-up pass's transition rows (dO = 0) do for nothing:
# what a chunk would take without them, the bound on leaving them out of those rows (`--kernels bwddhab --variants cur
# ablate --masks 0 1 2 4 8 15`; H100, 43rd session: 2.07 -> 1.72 us per chunk with all four skipped at (2, 4); the
# kernel that skipped them in the transition rows then took 1.006x the backward's time: benchmarks/results/s43/README.md)
BWD_DH_ABLATIONS = {
    1: ("WG2: Pg = Q K^T", "                    T.gemm(q_s[i % 2, :, :], k_s[i % 2, :, :], p_frag",
        "                    # Gamma's shared loads let-bound"),
    2: ("WG2: Pg scaled", "                    for r, cc in T.Parallel(BT, BT):\n                        p_frag[r, cc] = scale",
        "                    for r, cc in T.Parallel(BT, BT):\n                        gm_frag[r, cc] = gm_frag[r, cc] * a_s"),
    4: ("WG1: Pg^T dO", "                    T.gemm(p_s[i % 2, :, :], do_s[i % 2, :, :], pdo_frag",
        "                    T.barrier_wait(bar_st[i % 2]"),
    8: ("WG0: dS += Q^T (scale gamma dO)", "                    # dS += Q^T (scale * gamma * dO)\n",
        "                    T.barrier_arrive(wg2_free[i % 2])\n                    T.barrier_wait(bar_dvg"),
}


# experimental edits of chunk_prep.py for the `fix` variant (none now; measurements in docs/fwd_profile.md)
PREP_FIX: list[tuple[str, str]] = []

# the prep's pieces (chunk_prep.py): the first five inside its loop over v-heads (H200 at 4 v-heads per CTA, before the
# level-2 merge went to tensor cores: benchmarks/results/H200_prep_group.md)
PREP_ABLATIONS = {
    1: ("diagonal blocks", "                # ---- diagonal 16x16 blocks", "                # ---- level 1"),
    2: ("level-1 merge", "                # ---- level 1", "                # ---- level 2"),
    4: ("level-2 merge", "                # ---- level 2", "                # ---- Z = Pg Ag"),
    8: ("Pg, Ag, Z, A", "                # ---- Z = Pg Ag", "                # ---- masked stores"),
    16: ("stores", "                # ---- masked stores", "            if tma_stores:  # the last stores have read"),
    32: ("M: K K^T, Q K^T", "            # ---- M: Q K^T", "            tx = T.get_thread_binding()"),
    64: ("loads", "            # ---- loads, zero-filled", "            # ---- M: Q K^T"),
}


# the warp-specialized chunk gradient's per-CTA work around its items (gdn_bwd_chunk_ws.py, default path): where a CTA
# of one item ((16, 16): 17 SM-us per (chunk, v-head) against 11 at four v-heads per CTA) spends what a group
# amortizes. A skipped load keeps its barrier arrive (the consumers still pass, on stale data); the warpgroups' join
# (`fin`) stays (one barrier of both: skipped in one role it would hang the other)
BWDC_ABLATIONS = {
    1: ("dq store", "                # ---- dq stored through Q's buffer", "            elif tx < 256:"),
    2: ("dk store", "                # ---- dk stored through K's buffer",
        "            else:\n                # ================= WP"),
    4: ("dv stores", "                    # ---- dv stored through dVd's buffer",
        "                    # ---- dK += dKs K"),
    8: ("Q and K loads", "                    load_tile(q, q_s, bar_qk, t0",
        "                    T.barrier_arrive(bar_qk[0])"),
    16: ("S0 loads", "                        T.tma_copy(h[slot, hv, 0:K, 0:V], h_s",
         "                        T.barrier_arrive(bar_h[0])"),
    32: ("dS1 loads", "                        T.tma_copy(dh[slot, hv, 0:K, 0:V], dh_s",
         "                        T.barrier_arrive(bar_dh[0])"),
}


def guard_all(src: str, ablations: dict) -> str:
    """Put each ablation's block (from its start marker, included, to its end marker, excluded; found in
    the unmodified source) under `if (ablate // bit) % 2 == 0:`. Blocks must not overlap."""
    spans = []
    for bit, (_, start, end) in ablations.items():
        assert src.count(start) == 1, start
        a = src.index(start)
        spans.append((a, src.index(end, a), bit))
    spans.sort()
    assert all(b1 <= a2 for (_, b1, _), (a2, _, _) in zip(spans, spans[1:])), "overlapping ablation blocks"
    for a, b, bit in reversed(spans):
        block = src[a:b]
        indent = block[:len(block) - len(block.lstrip(" "))]
        shallow = [line for line in block.split("\n") if line.strip() and not line.startswith(indent)]
        assert not shallow, f"bit {bit}'s block leaves its indentation (move its end marker): {shallow[0]!r}"
        body = "".join(indent + "    " + line[len(indent):] + "\n" if line.strip() else "\n"
                       for line in block.rstrip("\n").split("\n"))
        src = src[:a] + f"{indent}if (ablate // {bit}) % 2 == 0:\n" + body + src[b:]
    return src


def variant_source(kernel: str, name: str, base_dir: str | None = None) -> str:
    """base: the kernel file in base_dir (default: this tree); cur: this tree's; fix: this tree's with the
    spec's experimental edits; ablate: fix plus the ablation bits."""
    spec = SPECS[kernel]
    path = Path(base_dir) / spec["file"].name if name == "base" and base_dir else spec["file"]
    src = path.read_text()
    edits = {"base": [], "cur": [], "fix": spec["fix"], "ablate": spec["fix"]}[name]
    for old, new in edits:
        assert src.count(old) == 1, f"edit does not match exactly once: {old!r}"
        src = src.replace(old, new)
    if name == "ablate":
        last = spec["last_param"]
        assert src.count(last) == 1
        src = src.replace(last, last + "        ablate: T.int32,\n")
        src = guard_all(src, spec["ablations"])
    return src


def build(kernel: str, name: str, workdir: str, base_dir: str | None = None):
    """Write the variant as a module next to a link to tilelang_src/common, compile it, return the kernel."""
    os.environ.setdefault("TILELANG_CACHE_DIR", os.path.join(workdir, "cache"))
    if workdir not in sys.path:
        sys.path.insert(0, workdir)
    Path(workdir, f"{kernel}_{name}.py").write_text(variant_source(kernel, name, base_dir))
    import tilelang

    spec = SPECS[kernel]
    # TileLang 0.1.15's register fences of two-warpgroup products clamped to their fragments, as the wheel's build does
    importlib.import_module("common.fence_fix").register()
    mod = importlib.import_module(f"{kernel}_{name}")
    func = getattr(mod, spec["factory"])(**spec["params"])
    names = [func.buffer_map[p].name if p in func.buffer_map else p.name for p in func.params]
    dtypes = {func.buffer_map[p].name: str(func.buffer_map[p].dtype) for p in func.params if p in func.buffer_map}
    kern = tilelang.compile(func, target="cuda", pass_configs={"tl.enable_fast_math": True})
    return kern, names, dtypes  # the kernel is called with its arguments by name: variants may differ in them


def _compile_only(job: tuple[str, str, str, str | None]) -> str:
    build(*job)  # the compiled kernel lands in TileLang's cache
    return f"{job[0]}/{job[1]}"


def _gated_inputs(T_: int, H: int, HV: int, device: str):
    """q, k, v, A, g_cumsum, beta, cu_seqlens of one sequence, as the chunk prep would give them, and the
    generator (seeded once: the forward's inputs are the same values as in the runs of docs/fwd_profile.md)."""
    import torch

    g = torch.Generator(device=device).manual_seed(0)
    BT, K = 64, 128
    return dict(
        q=torch.randn(T_, H, K, device=device, generator=g).bfloat16(),
        k=(torch.randn(T_, H, K, device=device, generator=g) / K**0.5).bfloat16(),
        v=torch.randn(T_, HV, K, device=device, generator=g).bfloat16(),
        A=(torch.randn(T_, HV, BT, device=device, generator=g) * 0.1).bfloat16(),
        g_cumsum=-(torch.arange(T_, device=device) % BT + 1).float()[:, None].expand(T_, HV).contiguous() * 0.01,
        beta=torch.full((T_, HV), 0.5, device=device),
        cu_seqlens=torch.tensor([0, T_], dtype=torch.int32, device=device),
    ), g


def fwd_inputs(T_: int, H: int, HV: int, device: str = "cuda"):
    import torch

    x, g = _gated_inputs(T_, H, HV, device)
    BT, K = 64, 128
    n_chunks = (T_ + BT - 1) // BT
    x.update(
        h0=torch.zeros(1, HV, K, K, device=device),
        o=torch.empty(T_, HV, K, dtype=torch.bfloat16, device=device),
        ht=torch.empty(1, HV, K, K, device=device),
        h=torch.empty(1, HV, K, K, dtype=torch.bfloat16, device=device),
        seg_seq=torch.zeros(1, dtype=torch.int32, device=device),
        ranges=torch.zeros(3, HV, 3, dtype=torch.int32, device=device),
        cp_h0=torch.zeros(1, HV, K, K, device=device),
        cp_out=torch.zeros(1, HV, K, K, device=device),
    )
    x["ranges"][0, :, 1] = n_chunks
    x["ranges"][0, :, 2] = 2  # the sequence's last segment
    x["z"] = (torch.randn(T_, HV, BT, device=device, generator=g) * 0.1).bfloat16()  # kernels that take Z
    x.update(scale=K**-0.5, use_h0=0, store_ht=1, state_v_first=0, store_o=1, store_h=0, warmup=0, group=HV // H)
    return x, n_chunks, "o"


def fwd_inputs_real_a(T_: int, H: int, HV: int, device: str = "cuda"):
    """fwd_inputs with A the true inverse of each chunk (python/flashqla/reference.py kkt_solve_ref, in float64, then
    rounded to bf16), so that a kernel that forms A itself (gdn_fwd_rs.py a_in_x) and one that loads it give o within
    A's rounding of each other."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("fq_reference", ROOT / "python" / "flashqla" / "reference.py")
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    x, n_chunks, out = fwd_inputs(T_, H, HV, device)
    x["A"] = ref.kkt_solve_ref(x["k"][None], x["beta"][None])[0].bfloat16()
    return x, n_chunks, out


def prep_inputs(T_: int, H: int, HV: int, device: str = "cuda"):
    import torch

    g = torch.Generator(device=device).manual_seed(0)
    BT, K = 64, 128
    n_chunks = (T_ + BT - 1) // BT
    k = torch.nn.functional.normalize(torch.randn(T_, H, K, device=device, generator=g), dim=-1)
    x = dict(
        k=k.bfloat16(),
        g=-torch.rand(T_, HV, device=device, generator=g) * 0.1,
        beta=torch.rand(T_, HV, device=device, generator=g),
        cu_seqlens=torch.tensor([0, T_], dtype=torch.int32, device=device),
        g_cumsum=torch.empty(T_, HV, device=device),
        A=torch.empty(T_, HV, BT, dtype=torch.bfloat16, device=device),
    )
    x["q"] = torch.randn(T_, H, K, device=device, generator=g).bfloat16()  # kernels that form Z
    x["z"] = torch.empty(T_, HV, BT, dtype=torch.bfloat16, device=device)
    x.update(scale=K**-0.5, num_slots=n_chunks + 1, slot0=0, group=HV // H)  # slots: ceil(T / BT) + N
    return x, 1, "A"  # time per launch


def bwd_chunk_inputs(T_: int, H: int, HV: int, device: str = "cuda"):
    import torch

    x, g = _gated_inputs(T_, H, HV, device)
    K = 128
    nh = (T_ + 63) // 64 + 1  # chunk slots: ceil(T / BT) + N
    d_o = torch.randn(T_, HV, K, device=device, generator=g).bfloat16()
    args = dict(q=x["q"], k=x["k"], v=x["v"], d_o=d_o, A=x["A"], g_cumsum=x["g_cumsum"], beta=x["beta"],
                cu_seqlens=x["cu_seqlens"],
                h=(torch.randn(nh, HV, K, K, device=device, generator=g) * 0.1).bfloat16(),
                dh=(torch.randn(nh, HV, K, K, device=device, generator=g) * 0.1).bfloat16(),
                dq=torch.empty(T_, HV, K, device=device), dk=torch.empty(T_, HV, K, device=device),
                dv=torch.empty(T_, HV, K, dtype=torch.bfloat16, device=device),
                dg=torch.empty(T_, HV, device=device), dbeta=torch.empty(T_, HV, device=device))
    args.update(scale=K**-0.5, group=HV // H)
    # dq / dk: fp32 per v-head here; a kernel that sums each group writes [T, H, K] in q's dtype (see fit_outputs).
    # dv means the same in both: it is the output compared
    return args, 1, "dv"


def dvd_prefill(x: dict, H: int, HV: int) -> None:
    """dv <- dVd = r * (K dS1) + Pg^T dO per chunk and v-head, what the chunk gradient forms itself unless dvd_in
    (which reads it from dv's rows): from the bf16 operands the kernel reads, in fp32, with Pg = scale * Gamma * (Q K^T)
    rounded to bf16 as the kernel stages it. bwd_chunk_inputs' sequence is whole chunks (T a multiple of 64)."""
    import torch

    BT = 64
    T_, _, K = x["q"].shape
    V = x["d_o"].shape[2]
    nc, grp = T_ // BT, HV // H
    q = x["q"].float().view(nc, BT, H, K).repeat_interleave(grp, dim=2)  # [nc, BT, HV, K]
    k = x["k"].float().view(nc, BT, H, K).repeat_interleave(grp, dim=2)
    g = x["g_cumsum"].view(nc, BT, HV)
    d_o = x["d_o"].float().view(nc, BT, HV, V)
    r = torch.exp(g[:, -1:, :] - g)  # [nc, BT, HV]
    kds = torch.einsum("cthk,chkv->cthv", k, x["dh"][:nc].float()) * r[..., None]
    causal = torch.ones(BT, BT, dtype=torch.bool, device=g.device).tril()[None, :, :, None]
    gamma = torch.where(causal, torch.exp(g[:, :, None, :] - g[:, None, :, :]), 0.0)  # [nc, BT (row), BT (col), HV]
    pg = (x["scale"] * gamma * torch.einsum("crhk,cshk->crsh", q, k)).bfloat16().float()
    dvd = kds + torch.einsum("crsh,crhv->cshv", pg, d_o)  # Pg^T dO
    x["dv"].copy_(dvd.reshape(T_, HV, V).bfloat16())


# the chunk prep's outputs, all compared between its kernels
PREP_OUTPUTS = ("A", "z", "g_cumsum")

# the chunk gradient's outputs, all compared between its kernels (dq, dk in the kernel's own shape, fit_outputs)
BWD_CHUNK_OUTPUTS = ("dv", "dq", "dk", "dg", "dbeta")


def fit_outputs(x: dict, dtypes: dict, H: int) -> dict:
    """The inputs for one kernel variant: dq / dk reallocated as [T, H, K] in the kernel's dtype when its
    chunk-gradient program sums them over each group of v-heads (they are fp32 per v-head otherwise)."""
    import torch

    out = dict(x)
    for name in ("dq", "dk"):
        if name in x and dtypes.get(name, "float32") != "float32":
            out[name] = torch.empty(x[name].shape[0], H, x[name].shape[2], dtype=getattr(torch, dtypes[name]),
                                    device=x[name].device)
    return out


def bwd_dh_inputs(T_: int, H: int, HV: int, device: str = "cuda"):
    import torch

    x, g = _gated_inputs(T_, H, HV, device)
    K = 128
    n_chunks = (T_ + 63) // 64
    args = dict(q=x["q"], k=x["k"], d_o=torch.randn(T_, HV, K, device=device, generator=g).bfloat16(), A=x["A"],
                g_cumsum=x["g_cumsum"], beta=x["beta"], cu_seqlens=x["cu_seqlens"],
                dht=torch.randn(1, HV, K, K, device=device, generator=g),
                dh=torch.empty(n_chunks + 1, HV, K, K, dtype=torch.bfloat16, device=device),
                dh0=torch.empty(1, HV, K, K, device=device))
    args.update(scale=K**-0.5, use_dht=1, store_dh0=1, state_v_first=0, group=HV // H)
    # one segment (no context parallelism): slot 0 holds the sequence, slot 1 the padding (seg_plan.py's
    # tables: first chunk, count, flags = 2, the sequence's last segment)
    rows = torch.zeros(2, HV, 3, dtype=torch.int32, device=device)
    rows[0, :, 1], rows[0, :, 2] = n_chunks, 2
    args.update(seg_seq=torch.tensor([0, 1], dtype=torch.int32, device=device), ranges=rows,
                cp_ds=torch.zeros(2, HV, K, K, device=device), cp_out=torch.zeros(2, HV, K, K, device=device),
                warmup=0)
    return args, n_chunks, "dh0"


# the chunk prep's parameters in the sm90 family (tilelang_src/variants.py)
PREP_PARAMS = dict(dtype="bfloat16", K=128, BT=64, tma_stores=True, min_blocks=4, z_rs=True, tma_loads=True,
                   mma_level1=True, diag8=True)

SPECS = {
    "fwd": dict(file=SRC / "sm90" / "gdn_fwd.py", factory="gdn_fwd_sm90",
                params=dict(dtype="bfloat16", K=128, V=128, BT=64, BV=64), fix=FWD_FIX,
                last_param="        warmup: T.int32,\n", ablations=FWD_ABLATIONS, inputs=fwd_inputs,
                combos=[4 | 8, 1 | 16 | 32, 64 | 128 | 256, 1 | 2 | 16 | 32], unit="us/chunk"),
    # o through shared memory and the storer warp (BV = 64)
    "fwd_so": dict(file=SRC / "sm90" / "gdn_fwd.py", factory="gdn_fwd_sm90",
                   params=dict(dtype="bfloat16", K=128, V=128, BT=64, BV=64, stage_o=True), fix=[], last_param="",
                   ablations={}, inputs=fwd_inputs, combos=[], unit="us/chunk", variants=["cur"]),
    # the 128-wide V slice of the same program (base: a kernel file that has BV = 128, from --base-dir)
    "fwd128": dict(file=SRC / "sm90" / "gdn_fwd.py", factory="gdn_fwd_sm90",
                   params=dict(dtype="bfloat16", K=128, V=128, BT=64, BV=128), fix=FWD_FIX,
                   last_param="        warmup: T.int32,\n", ablations=FWD_ABLATIONS, inputs=fwd_inputs,
                   combos=[4 | 8, 1 | 16 | 32, 64 | 128 | 256, 1 | 2 | 16 | 32], unit="us/chunk",
                   variants=["base", "cur", "fix", "ablate"]),
    # the same with o stored by TMA from W's stage (stage_o at BV = 128; no ablation bits: bit 64's block holds
    # that path's TMA wait)
    "fwd128t": dict(file=SRC / "sm90" / "gdn_fwd.py", factory="gdn_fwd_sm90",
                    params=dict(dtype="bfloat16", K=128, V=128, BT=64, BV=128, stage_o=True), fix=[], last_param="",
                    ablations={}, inputs=fwd_inputs, combos=[], unit="us/chunk", variants=["cur"]),
    # the storer warp's h (S~) by TMA (tma_h, the sm90 family's default since the eighteenth session; with --no-o
    # --store-h, as in the backward's recompute), at BV = 64 (o staged) and at BV = 128 (o by TMA)
    "fwd_soth": dict(file=SRC / "sm90" / "gdn_fwd.py", factory="gdn_fwd_sm90",
                     params=dict(dtype="bfloat16", K=128, V=128, BT=64, BV=64, stage_o=True, tma_h=True), fix=[],
                     last_param="", ablations={}, inputs=fwd_inputs, combos=[], unit="us/chunk", variants=["cur"]),
    "fwd128th": dict(file=SRC / "sm90" / "gdn_fwd.py", factory="gdn_fwd_sm90",
                     params=dict(dtype="bfloat16", K=128, V=128, BT=64, BV=128, stage_o=True, tma_h=True), fix=[],
                     last_param="", ablations={}, inputs=fwd_inputs, combos=[], unit="us/chunk", variants=["cur"]),
    # the 32-wide slice (47th session; the sm90 row that FLASHQLA_FWD_BLOCK_V=32 forces): against fwd_soth on the same
    # inputs, the chain's period at half the products' width (four CTAs per head instead of two)
    "fwd32_soth": dict(file=SRC / "sm90" / "gdn_fwd.py", factory="gdn_fwd_sm90",
                       params=dict(dtype="bfloat16", K=128, V=128, BT=64, BV=32, stage_o=True, tma_h=True), fix=[],
                       last_param="", ablations={}, inputs=fwd_inputs, combos=[], unit="us/chunk", variants=["cur"]),
    # the chunk prep at up to 4 v-heads per CTA (the op's choice: the largest divisor of the group up to the spec's
    # vpc), with the sm90 family's parameters (A and Z by TMA); variant `base` is the kernel file of --base-dir
    # (another commit's prep, e.g. the per-v-head one of ebdf7e6, which ignores vpc)
    "prep": dict(file=SRC / "sm90" / "chunk_prep.py", factory="gdn_chunk_prep_sm90",
                 params=dict(PREP_PARAMS), fix=PREP_FIX,
                 last_param="        num_vblocks: T.int32,  # group / vpc\n", ablations=PREP_ABLATIONS,
                 inputs=prep_inputs, combos=[1 | 2 | 4, 1 | 2 | 4 | 8], unit="us/launch", vpc=4),
    # the same at up to 16 v-heads per CTA, with the ablation bits: at (1, 16) and 132 chunks (8448 tokens) one CTA per
    # SM walks 16 v-heads, so `--masks 120 127` (everything but the gates and the inverse skipped, then the inverse too)
    # times the inverse's latency on a lone warpgroup over 16 repetitions (speed_plan: its in-kernel budget)
    "prep16": dict(file=SRC / "sm90" / "chunk_prep.py", factory="gdn_chunk_prep_sm90",
                   params=dict(PREP_PARAMS, VPC_MAX=16), fix=PREP_FIX,
                   last_param="        num_vblocks: T.int32,  # group / vpc\n", ablations=PREP_ABLATIONS,
                   inputs=prep_inputs, combos=[], unit="us/launch", vpc=16),
    # the same with the level-2 merge on per-warp TF32 mma.sync (mma_level2)
    "prep16l2": dict(file=SRC / "sm90" / "chunk_prep.py", factory="gdn_chunk_prep_sm90",
                     params=dict(PREP_PARAMS, VPC_MAX=16, mma_level2=True), fix=PREP_FIX,
                     last_param="        num_vblocks: T.int32,  # group / vpc\n", ablations=PREP_ABLATIONS,
                     inputs=prep_inputs, combos=[], unit="us/launch", vpc=16),
    # the same at up to 1, 2 or 3 v-heads per CTA
    **{f"prep{vpc}": dict(file=SRC / "sm90" / "chunk_prep.py", factory="gdn_chunk_prep_sm90",
                          params=dict(PREP_PARAMS), fix=[], last_param="", ablations={},
                          combos=[], inputs=prep_inputs, unit="us/launch", variants=["cur"], vpc=vpc)
       for vpc in (1, 2, 3)},
    # its options against the defaults (4 CTAs per SM, Pg and Ag in one loop, the level-2 merge on tensor cores, A and
    # Z stored by TMA, Z by an RS wgmma, Q and K loaded by TMA, the level-1 merge on per-warp TF32 mma.sync, the
    # diagonal 16x16 blocks from 8x8 solves): the level-2 merge by FMAs ("n"); that and 4 CTAs per
    # SM (128 registers) and Pg and Ag in two loops ("c6": the first grouped kernel, c6f644c); the level-1 merge on
    # tensor cores too ("l1": 3-4% slower); A and Z by element stores ("e": the default before the eighteenth session,
    # 5-12% slower); 3 CTAs per SM ("m3": 2-4% slower; the default before the eighteenth session, when 4 made c6f644c's
    # kernel spill); Z from shared memory ("nz"), Q and K by element loads ("nld"), both ("s18": the eighteenth
    # session's default; the nineteenth's runs of z_rs and tma_loads were specs prep4z / prep4ld / prep4zld against it);
    # the level-1 merge by FMA loops ("nm1"), the diagonal blocks by 16x16 solves ("nd8"), both ("s19": the nineteenth
    # session's default; the twentieth's runs of mma_level1 and diag8 were specs prep4m1 / prep4d8 / prep4d8m1 against
    # it, benchmarks/results/H200_prep_inverse.md); the gates summed once for all v-heads before the loop ("go":
    # gates_once; within noise on the H200 in the twenty-first session); the level-2 merge on per-warp TF32 mma.sync
    # ("l2": mma_level2)
    **{f"prep4{tag}": dict(file=SRC / "sm90" / "chunk_prep.py", factory="gdn_chunk_prep_sm90",
                           params=dict(PREP_PARAMS, **extra), fix=[], last_param="",
                           ablations={}, combos=[], inputs=prep_inputs, unit="us/launch", variants=["cur"], vpc=4)
       for tag, extra in {"n": dict(tc_level2=False),
                          "c6": dict(min_blocks=4, pg_ag_one_loop=False, tc_level2=False, tma_stores=False, z_rs=False,
                                     tma_loads=False, mma_level1=False, diag8=False),
                          "l1": dict(tc_level1=True, mma_level1=False, diag8=False),
                          "e": dict(tma_stores=False, min_blocks=3, z_rs=False, tma_loads=False, mma_level1=False,
                                    diag8=False),
                          "m3": dict(min_blocks=3), "nz": dict(z_rs=False), "nld": dict(tma_loads=False),
                          "s18": dict(z_rs=False, tma_loads=False, mma_level1=False, diag8=False),
                          "nm1": dict(mma_level1=False), "nd8": dict(diag8=False),
                          "s19": dict(mma_level1=False, diag8=False), "go": dict(gates_once=True),
                          "l2": dict(mma_level2=True)}.items()},
    # the backward's kernels: base / cur comparisons only (no fix edits, no ablation bits yet)
    "bwdc": dict(file=SRC / "sm90" / "gdn_bwd_chunk.py", factory="gdn_bwd_chunk_sm90",
                 params=dict(dtype="bfloat16", K=128, V=128, BT=64), fix=[], last_param="", ablations={},
                 combos=[], inputs=bwd_chunk_inputs, unit="us/launch"),
    # the warp-specialized chunk gradient (variant `cur` of this file), timed and compared against bwdc's
    # kernels in the same run with --kernels bwdc bwdcws (every output: BWD_CHUNK_OUTPUTS); its defaults are the
    # best measured (H200_bwdc_ws.md): TMA for full chunks, Gamma held, registers 256 / 224 / 24, U and W by WK;
    # variant `base` is the kernel file of --base-dir (another commit's kernel in the same process)
    "bwdcws": dict(file=SRC / "sm90" / "gdn_bwd_chunk_ws.py", factory="gdn_bwd_chunk_ws_sm90",
                   params=dict(dtype="bfloat16", K=128, V=128, BT=64, dl_rs=True), fix=[], last_param="", ablations={},
                   combos=[], inputs=bwd_chunk_inputs, unit="us/launch", variants=["base", "cur"]),
    # the same with BWDC_ABLATIONS (what the per-CTA work around the items costs; e.g. --heads 16,16 16,64
    # --masks 0 1 2 3 4 8 48 63)
    "bwdcwsab": dict(file=SRC / "sm90" / "gdn_bwd_chunk_ws.py", factory="gdn_bwd_chunk_ws_sm90",
                     params=dict(dtype="bfloat16", K=128, V=128, BT=64, dl_rs=True), fix=[],
                     last_param="        group: T.int32,  # HV / H, from the launcher: head indices are products, never "
                                "divisions\n",
                     ablations=BWDC_ABLATIONS, combos=[1 | 2, 1 | 2 | 4, 16 | 32, 63], inputs=bwd_chunk_inputs,
                     unit="us/launch", variants=["cur", "ablate"]),
    # the former split: U = K S0 and W formed by WA (u_in_wk=False)
    "bwdcwsa": dict(file=SRC / "sm90" / "gdn_bwd_chunk_ws.py", factory="gdn_bwd_chunk_ws_sm90",
                    params=dict(dtype="bfloat16", K=128, V=128, BT=64, u_in_wk=False), fix=[], last_param="",
                    ablations={}, combos=[], inputs=bwd_chunk_inputs, unit="us/launch", variants=["cur"]),
    # the same with element copies for every input but the states (S0, dS1)
    "bwdcwse": dict(file=SRC / "sm90" / "gdn_bwd_chunk_ws.py", factory="gdn_bwd_chunk_ws_sm90",
                    params=dict(dtype="bfloat16", K=128, V=128, BT=64, tma_inputs=False, qk_tma=False), fix=[],
                    last_param="", ablations={}, combos=[], inputs=bwd_chunk_inputs, unit="us/launch",
                    variants=["cur"]),
    "bwddh": dict(file=SRC / "sm90" / "gdn_bwd_dh.py", factory="gdn_bwd_dh_sm90",
                  params=dict(dtype="bfloat16", K=128, V=128, BT=64, BV=64), fix=[], last_param="", ablations={},
                  combos=[], inputs=bwd_dh_inputs, unit="us/chunk"),
    # the state gradient as the wheel builds it (tma_dh), with BWD_DH_ABLATIONS
    "bwddhab": dict(file=SRC / "sm90" / "gdn_bwd_dh.py", factory="gdn_bwd_dh_sm90",
                    params=dict(dtype="bfloat16", K=128, V=128, BT=64, BV=64, tma_dh=True), fix=[],
                    last_param="        warmup: T.int32,\n", ablations=BWD_DH_ABLATIONS, combos=[1 | 2 | 4 | 8],
                    inputs=bwd_dh_inputs, unit="us/chunk", variants=["cur", "ablate"]),
    # dS~ stored to dh by TMA (tma_dh, the sm90 family's default since the eighteenth session)
    "bwddht": dict(file=SRC / "sm90" / "gdn_bwd_dh.py", factory="gdn_bwd_dh_sm90",
                   params=dict(dtype="bfloat16", K=128, V=128, BT=64, BV=64, tma_dh=True), fix=[], last_param="",
                   ablations={}, combos=[], inputs=bwd_dh_inputs, unit="us/chunk", variants=["cur"]),
}

# fwd_sothzr / fwd128thzr: fwd_soth and fwd128th with Z read from the ring's stage by WG2's Z W (z_from_ring,
# twenty-seventh session)
for _name in ("fwd_soth", "fwd128th"):
    SPECS[_name + "zr"] = dict(SPECS[_name], params=dict(SPECS[_name]["params"], z_from_ring=True))

# the register-operand forward (tilelang_src/sm90/gdn_fwd_rs.py, twenty-ninth session) at each width with the sm90
# family's parameters, against the default kernel of that width (fwd128thzr, fwd_soth) on the same inputs: e.g.
# --kernels fwd128thzr fwdrs128 fwd_soth fwdrs64 (o stored, no chunk states: the kernel's only use)
SPECS["fwdrs128"] = dict(file=SRC / "sm90" / "gdn_fwd_rs.py", factory="gdn_fwd_rs_sm90",
                         params=dict(dtype="bfloat16", K=128, V=128, BT=64, BV=128, regs=(208, 64, 32)), fix=[],
                         last_param="", ablations={}, inputs=fwd_inputs, combos=[], unit="us/chunk", variants=["cur"])
SPECS["fwdrs64"] = dict(SPECS["fwdrs128"], params=dict(SPECS["fwdrs128"]["params"], BV=64, regs=(208, 128, 128)))
# ... with the ring's K, V, A and gates freed once W^T is formed (early_release, thirtieth session: "er"), and with Z
# formed by X's warpgroup as well (z_in_x: "erz"; its o differs from the others by Z's rounding, and its prep would
# skip Q and Z: the kernel time here leaves that out)
for _w in ("128", "64"):
    _p = SPECS["fwdrs" + _w]["params"]
    SPECS["fwdrs" + _w + "er"] = dict(SPECS["fwdrs" + _w], params=dict(_p, early_release=True))
    SPECS["fwdrs" + _w + "erz"] = dict(SPECS["fwdrs" + _w], params=dict(_p, early_release=True, z_in_x=True))
# ... with A formed by X's warpgroup (a_in_x, BV = 64 only: does the warpgroup that forms X have room for the inverse?),
# against the same kernel loading A, both on inputs whose A is the true inverse ("ea" against "erA": o within A's
# rounding of each other)
# ... and SK in two halves (sk_halves: 16 registers of SK live), at the default 208 / 64 / 32 and at 192 / 104 / 24
# (ptxas serializes the kernel's wgmma at 192 without it): what the halves cost the chain, and whether the math
# warpgroups' 192 (room for a 104-register auxiliary warpgroup, docs/speed_plan.md Ready 1 (a)) costs more; o should be
# bitwise fwdrs128er's (each element of SK is the same k-loop of products)
SPECS["fwdrs128ersk"] = dict(SPECS["fwdrs128er"], params=dict(SPECS["fwdrs128er"]["params"], sk_halves=True))
SPECS["fwdrs128ersk192"] = dict(SPECS["fwdrs128er"], params=dict(SPECS["fwdrs128er"]["params"], sk_halves=True,
                                                                 regs=(192, 104, 24)))
# ... and at 192 / 104 / 24 with A formed by X's warpgroup (104 registers: the auxiliary warpgroup's budget at BV = 128),
# against the same kernel loading A, both on inputs whose A is the true inverse
SPECS["fwdrs128erskA"] = dict(SPECS["fwdrs128ersk192"], inputs=fwd_inputs_real_a)
SPECS["fwdrs128erska"] = dict(SPECS["fwdrs128ersk192"], params=dict(SPECS["fwdrs128ersk192"]["params"], a_in_x=True),
                              inputs=fwd_inputs_real_a)
# ... and both math warpgroups on one code path (math_pair, 34th session: half the math code, for the instruction fetch
# stalls; the same products, so o should be bitwise fwdrs128er's)
SPECS["fwdrs128erp"] = dict(SPECS["fwdrs128er"], params=dict(SPECS["fwdrs128er"]["params"], math_pair=True))
SPECS["fwdrs64erA"] = dict(SPECS["fwdrs64er"], inputs=fwd_inputs_real_a)
SPECS["fwdrs64ea"] = dict(SPECS["fwdrs64er"], params=dict(SPECS["fwdrs64er"]["params"], a_in_x=True),
                          inputs=fwd_inputs_real_a)

# variants of the warp-specialized chunk gradient by its factory's arguments: setmaxnreg splits (WA, WK, WP; the
# sum at most 504, see the kernel); each of the four WA options on by default turned off (Vd formed in two
# halves, dg's whole-chunk terms summed by a warp, dA and dKs stored from fragments, <S0, dS1>'s quarters folded
# before one reduction) and all four off (7fa5060's kernel); WA's GEMMs issued ahead of work that does not need
# them (wa_async, off by default); WA's two redundant waits dropped (lean_waits, off by default); dL handed to WK,
# which forms dKK K, dKK^T K and dbeta's second part (dkk_in_wk, off by default; also with 240 / 240 / 24); dv stored
# by TMA (tma_dv, off by default: no faster, eighteenth session); dL's second product through Ag's buffer instead of
# with A^T dA as the register operand (dl_rs=False: the default until the nineteenth session, whose run of dl_rs was
# spec bwdcwsdl against it). (The nineteenth session's `items` walk, specs bwdcwsi2 / i4 / i8: H200_bwdc_items.md; the
# option is gone with its code.) Without the warpgroups' join before the dq and dk stores (join=False, "nj": each
# stores when its own loop ends). The twenty-second session's runs at one v-head per group (never measured there before;
# benchmarks/results/H200_bwdc_regs.md): interleaved (--rounds), 240 / 224 / 40 0.93x at (32, 32) (1.09x at
# (16, 64): the small-group variant's split since), tma_dv 0.975x; specs r4-r6 (other splits with the producer warps above 24
# registers), r2t / r4t (with tma_dv) and b (the default again, for the run's noise) came with them; qk / r2qk:
# dq and dk stored by TMA (tma_dqdk, off: 1.02-1.04x), with the default split and with the small-group variant's;
# pl / r2pl / r2qkpl: dS1 and dO loaded after Q and K (prio_loads: on in the gmax 1 variant), alone and with the
# others (benchmarks/results/H200_bwdc_prio.md); plv / plc / plvc / r2plvc: V after Q and K too (prio_v), each load
# after its predecessor's arrival (chain_loads); plnj / plt / plr4 / ply: the gmax 1 variant with join=False, tma_dv,
# 248 / 224 / 32, wa_async; di / dipl: dVd read from dv's rows (dvd_in; dvd_prefill fills them; not yet run);
# pldq / pldqnj: dq stored from WA's accumulator once final (dq_early, without the join too; not yet run); hg / r2hg /
# plhg: <S0, dS1> by two tensor-core products (hs_gemm, twenty-sixth session) at the default, the gmax 2 and the gmax 1
# variants' parameters
# p8 / r2hgp8: the fp32 C x C buffer's rows padded by 8 floats instead of 4 (row_pad, twenty-seventh session) at the
# default and the shipped gmax 2 variant's parameters
_WA_OPTIONS = ("vd_halves", "dg_warp_sum", "frag_stores", "hs_fold")
for _name, _extra in {"bwdcwsr1": dict(regs=(248, 232, 24)), "bwdcwsr2": dict(regs=(240, 224, 40)),
                      "bwdcwsr3": dict(regs=(232, 232, 40)), "bwdcwsnh": dict(vd_halves=False),
                      "bwdcwsng": dict(dg_warp_sum=False), "bwdcwsnf": dict(frag_stores=False),
                      "bwdcwsnk": dict(hs_fold=False), "bwdcws0": {o: False for o in _WA_OPTIONS},
                      "bwdcwsy": dict(wa_async=True), "bwdcwsl": dict(lean_waits=True),
                      "bwdcwsd": dict(dkk_in_wk=True), "bwdcwsdr": dict(dkk_in_wk=True, regs=(240, 240, 24)),
                      "bwdcwst": dict(tma_dv=True), "bwdcwsndl": dict(dl_rs=False),
                      "bwdcwsnj": dict(join=False), "bwdcwsb": {},
                      "bwdcwsr4": dict(regs=(248, 224, 32)), "bwdcwsr5": dict(regs=(256, 216, 32)),
                      "bwdcwsr6": dict(regs=(248, 216, 40)), "bwdcwsr2t": dict(regs=(240, 224, 40), tma_dv=True),
                      "bwdcwsr4t": dict(regs=(248, 224, 32), tma_dv=True),
                      "bwdcwsqk": dict(tma_dqdk=True), "bwdcwsr2qk": dict(regs=(240, 224, 40), tma_dqdk=True),
                      "bwdcwspl": dict(prio_loads=True), "bwdcwsr2pl": dict(regs=(240, 224, 40), prio_loads=True),
                      "bwdcwsr2qkpl": dict(regs=(240, 224, 40), tma_dqdk=True, prio_loads=True),
                      "bwdcwsplv": dict(prio_loads=True, prio_v=True),
                      "bwdcwsplc": dict(prio_loads=True, chain_loads=True),
                      "bwdcwsplvc": dict(prio_loads=True, prio_v=True, chain_loads=True),
                      "bwdcwsr2plvc": dict(regs=(240, 224, 40), prio_loads=True, prio_v=True, chain_loads=True),
                      "bwdcwsplnj": dict(prio_loads=True, join=False), "bwdcwsplt": dict(prio_loads=True, tma_dv=True),
                      "bwdcwsplr4": dict(prio_loads=True, regs=(248, 224, 32)),
                      "bwdcwsply": dict(prio_loads=True, wa_async=True), "bwdcwsdi": dict(dvd_in=True),
                      "bwdcwsdipl": dict(dvd_in=True, prio_loads=True),
                      "bwdcwspldq": dict(prio_loads=True, dq_early=True),
                      "bwdcwspldqnj": dict(prio_loads=True, dq_early=True, join=False),
                      "bwdcwshg": dict(hs_gemm=True), "bwdcwsr2hg": dict(regs=(240, 224, 40), hs_gemm=True),
                      "bwdcwsplhg": dict(prio_loads=True, hs_gemm=True),
                      "bwdcwsp8": dict(row_pad=8),
                      "bwdcwsr2hgp8": dict(regs=(240, 224, 40), hs_gemm=True, row_pad=8)}.items():
    SPECS[_name] = dict(SPECS["bwdcws"], params=dict(SPECS["bwdcws"]["params"], **_extra), variants=["cur"])
    if _extra.get("dvd_in"):  # dVd read from dv's rows: filled before the run whose outputs are compared
        SPECS[_name]["prefill"] = dvd_prefill


def time_us(fn, reps: int = 20) -> float:
    import torch

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3)
    return sorted(times)[len(times) // 2]


def compared_outputs(make, out: str) -> tuple:
    """The outputs compared between kernels of one input kind (every output of the chunk gradient and the prep)."""
    return BWD_CHUNK_OUTPUTS if make is bwd_chunk_inputs else PREP_OUTPUTS if make is prep_inputs else (out,)


def outputs_of_a_run(spec: dict, run, xk: dict, outs: tuple, H: int, HV: int) -> dict:
    """The outputs `outs` of one run: poisoned with NaN before it (an output the kernel leaves unwritten shows as NaN),
    the spec's prefill (an input held in an output's buffer, which the timed runs overwrite) after that, then copied."""
    for o in outs:
        xk[o].fill_(float("nan"))
    if "prefill" in spec:
        spec["prefill"](xk, H, HV)
    run()
    return {o: xk[o].float().clone() for o in outs}


def output_gaps(got: dict, ref: dict) -> dict:
    """max |got - ref| per output; nan for an output of another shape than the reference's."""
    return {o: (got[o] - ref[o]).abs().max().item() if got[o].shape == ref[o].shape else float("nan") for o in got}


def interleaved(args, kernels: dict) -> int:
    """--rounds: per shape, every kernel once per round (outputs poisoned before each run, compared with the first
    kernel's), then the median of its rounds' times and the ratio to the first kernel's median."""
    import time

    import torch

    inputs = {SPECS[k]["inputs"] for k, _ in kernels}
    if len(inputs) != 1 or args.masks is not None or any(v == "ablate" for _, v in kernels):
        raise SystemExit("--rounds: kernels of one input kind, without ablation masks")
    make = inputs.pop()
    print(f"{'kernel':<10} {'variant':<7} {'(h_qk, h_v)':<12} {'median':>9} {'min':>9} {'max':>9} {'/ first':>8} "
          f"{'max |out - first|':>17}  ({args.rounds} rounds, interleaved)")
    for h in args.heads:
        H, HV = (int(s) for s in h.split(","))
        x, per, out = make(args.tokens, H, HV)
        names_out = compared_outputs(make, out)
        runs, times, diffs, ref = {}, {}, {}, None
        for (k, name), (kern, names, dtypes) in kernels.items():
            xk = fit_outputs(x, dtypes, H)
            runs[(k, name)] = (lambda kern=kern, names=names, xk=xk: kern(*[xk[n] for n in names]), xk)
        first = next(iter(runs))
        t_end = time.perf_counter() + 1.0  # warm-up: the clocks settle before the first timed kernel
        while time.perf_counter() < t_end:
            runs[first][0]()
            torch.cuda.synchronize()
        for _ in range(args.rounds):
            for key, (run, xk) in runs.items():
                got = outputs_of_a_run(SPECS[key[0]], run, xk, names_out, H, HV)
                ref = ref or got
                diffs[key] = max(diffs.get(key, 0.0), *output_gaps(got, ref).values())
                times.setdefault(key, []).append(time_us(run) / per)
        base = sorted(times[first])[len(times[first]) // 2]
        for key, ts in times.items():
            med = sorted(ts)[len(ts) // 2]
            print(f"{key[0]:<10} {key[1]:<7} {f'({H}, {HV})':<12} {med:9.2f} {min(ts):9.2f} {max(ts):9.2f} "
                  f"{med / base:8.3f} {diffs[key]:17.3e}", flush=True)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kernels", nargs="+", default=["fwd", "prep"], choices=list(SPECS))
    ap.add_argument("--heads", nargs="+", default=["2,8", "16,64"])
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--variants", nargs="+", default=["base", "fix", "ablate"],
                    choices=["base", "cur", "fix", "ablate"])
    ap.add_argument("--no-o", action="store_true",
                    help="forward with store_o = 0, as in the backward's state recompute (compares h_out)")
    ap.add_argument("--store-h", action="store_true",
                    help="forward storing S~ per chunk (the storer warp), as in the backward's state recompute")
    ap.add_argument("--base-dir", help="folder with the kernel files of the `base` variant (default: this tree)")
    ap.add_argument("--masks", nargs="+", type=int, default=None,
                    help="the ablation masks to time in the `ablate` variant (sums of bits; 0 skips nothing) instead "
                         "of nothing, each bit and the spec's combinations; e.g. prep --masks 0 120 at --heads 1,4: "
                         "a lone CTA per SM doing only the inverse (and the gates) of its 4 v-heads")
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "flashqla_ablate"))
    ap.add_argument("--rounds", type=int, default=0,
                    help="time the kernels (of one input kind, no ablation masks) interleaved: this many rounds over "
                         "all of them per shape, after a second of warm-up, and print each one's median over the "
                         "rounds and its ratio to the first kernel's (a kernel-major run drifts by a few percent: the "
                         "twenty-second session's first spec ran 4-6% slower than the same spec timed last)")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    if not os.path.exists(os.path.join(args.workdir, "common")):
        os.symlink(SRC / "common", os.path.join(args.workdir, "common"))
    jobs = [(k, v, args.workdir, args.base_dir) for k in args.kernels for v in args.variants
            if (v != "ablate" or SPECS[k]["ablations"]) and v in SPECS[k].get("variants", [v])]
    with cf.ProcessPoolExecutor(len(jobs)) as pool:  # the compiles run in parallel
        for done in pool.map(_compile_only, jobs):
            print(f"compiled {done}", flush=True)
    kernels = {(k, v): build(*job) for job in jobs for k, v in [job[:2]]}  # from TileLang's cache
    print(f"{'kernel':<6} {'variant':<7} {'skipped':<40} {'(h_qk, h_v)':<12} {'time':>9} {'unit':<10} "
          f"{'max |out - base|':>16}")
    if args.rounds:
        return interleaved(args, kernels)
    refs = {}  # (inputs, heads) -> the first variant's outputs: kernels of the same inputs compare with each other
    for kname in args.kernels:
        spec = SPECS[kname]
        for h in args.heads:
            H, HV = (int(s) for s in h.split(","))
            x, per, out = spec["inputs"](args.tokens, H, HV)
            if spec["inputs"] is fwd_inputs and args.no_o:
                x["store_o"] = 0
                out = "ht"
            if spec["inputs"] is fwd_inputs and args.store_h:
                import torch

                x["store_h"] = 1
                x["h"] = torch.empty(per + 1, HV, 128, 128, dtype=torch.bfloat16, device="cuda")  # slots
            outs = compared_outputs(spec["inputs"], out)
            if "vpc" in spec:  # v-heads per CTA as the op picks them: the largest divisor of the group up to vpc
                vpc = max(d for d in range(1, spec["vpc"] + 1) if (HV // H) % d == 0)
                x.update(vpc=vpc, num_vblocks=HV // H // vpc)
            for (k, name), (kern, names, dtypes) in kernels.items():
                if k != kname:
                    continue
                masks = args.masks if args.masks is not None else [0, *spec["ablations"], *spec["combos"]]
                for mask in masks if name == "ablate" else [0]:
                    x["ablate"] = mask
                    xk = fit_outputs(x, dtypes, H)

                    def run():
                        kern(*[xk[n] for n in names])

                    got = outputs_of_a_run(spec, run, xk, outs, H, HV)  # the run whose outputs are compared
                    us = time_us(run) / per
                    ref = refs.setdefault((spec["inputs"].__name__, h), got)
                    diffs = output_gaps(got, ref)
                    what = " + ".join(n for bit, (n, _, _) in spec["ablations"].items() if mask & bit) or "-"
                    extra = "  " + " ".join(f"{o} {d:.2e} (max |ref| {ref[o].abs().max().item():.2e})"
                                            for o, d in diffs.items()) if len(outs) > 1 else ""
                    print(f"{kname:<6} {name:<7} {what:<40} {f'({H}, {HV})':<12} {us:9.2f} {spec['unit']:<10} "
                          f"{max(diffs.values()):16.3e}{extra}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
