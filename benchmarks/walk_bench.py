#!/usr/bin/env python3
"""The context-parallel correction walk (tilelang_src/sm90/cp_correct.py) alone: variants of the kernel
compiled with TileLang's JIT on the GPU machine, timed on one long sequence split into segments, each
checked against a float64 walk of the same inputs, forward and reverse.

    PYTHONPATH=<site with tilelang> python benchmarks/walk_bench.py [--heads 8] [--tokens 32768]
        [--seg-tokens 2048] [--variants cur t256 tma tma256 noprefetch split256 tmasplit]

The walk is a chain: step j needs step j - 1's state, so its time is the number of steps times one step's
latency, whatever the SMs around it do (at (2, 8) one 32768-token sequence: 16 segments, 16 CTAs).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# name -> (factory in sm90/cp_correct.py, its keyword arguments), or (module, factory, keyword arguments) for a walk in
# another module; a walk with split_m or in cp_correct_rs.py loads M split into bf16 high and low parts (SPLIT_M)
VARIANTS = {
    "cur": ("gdn_cp_correct_sm90", {}),
    "t256": ("gdn_cp_correct_sm90", dict(threads=256)),
    "tma": ("gdn_cp_correct_sm90", dict(tma=True)),
    "tma256": ("gdn_cp_correct_sm90", dict(tma=True, threads=256)),
    "noprefetch": ("gdn_cp_correct_sm90", dict(prefetch=False)),
    "split256": ("gdn_cp_correct_sm90", dict(split_acc=True, threads=256)),
    "tmasplit": ("gdn_cp_correct_sm90", dict(tma=True, split_acc=True, threads=256)),
    # the 40th session: the products only on fallback segments (skip_warm), a 32-wide V slice (four CTAs per head,
    # half the products each), both
    "tmaskip": ("gdn_cp_correct_sm90", dict(tma=True, skip_warm=True)),
    "tma32": ("gdn_cp_correct_sm90", dict(tma=True, BV=32)),
    "tma32skip": ("gdn_cp_correct_sm90", dict(tma=True, BV=32, skip_warm=True)),
    # what the products cost in a step (diagnostics only: bf16-level error, reported and not accepted): M rounded
    # to bf16 (two products), both operands rounded (one, as FlashQLA's walk)
    "tma2p": ("gdn_cp_correct_sm90", dict(tma=True, products=2)),
    "tma1p": ("gdn_cp_correct_sm90", dict(tma=True, products=1)),
    # the 45th session: the default walk since the 43rd (32 wide, M split by the warm-up pass), the register walk
    # (cp_correct_rs.py, 64 wide) with E fetched after or before M, and the register walk's chain without its products
    # or without its store of S (diagnostics; rs_nostore loses its products too, see rs_final below)
    "split32": ("gdn_cp_correct_sm90", dict(tma=True, BV=32, split_m=True)),
    "split32_nostore": ("gdn_cp_correct_sm90", dict(tma=True, BV=32, split_m=True, store_s=False)),
    "rs": ("sm90.cp_correct_rs", "gdn_cp_correct_rs_sm90", {}),
    "rs_efirst": ("sm90.cp_correct_rs", "gdn_cp_correct_rs_sm90", dict(e_first=True)),
    "rs_loads": ("sm90.cp_correct_rs", "gdn_cp_correct_rs_sm90", dict(products=0)),
    "rs_nostore": ("sm90.cp_correct_rs", "gdn_cp_correct_rs_sm90", dict(store="none")),
    "rs_loadsonly": ("sm90.cp_correct_rs", "gdn_cp_correct_rs_sm90", dict(products=0, store="none")),
    "rs_loadshi": ("sm90.cp_correct_rs", "gdn_cp_correct_rs_sm90", dict(products=0, store="none", load_ml=False)),
    # E read from global memory into registers a step ahead, M three steps ahead (cp_correct_rs.py e_global), and
    # its loads alone
    "rs_eg": ("sm90.cp_correct_rs", "gdn_cp_correct_rs_sm90", dict(e_global=True)),
    "rs_egloads": ("sm90.cp_correct_rs", "gdn_cp_correct_rs_sm90", dict(e_global=True, products=0, store="none")),
    # S_{j+1} stored without the TMA store (s45_2: 1.7 us of a step): through out_s and the threads' 16-byte copies, or
    # from the registers, each with E by TMA or in registers (with E in registers and direct stores no proxy fence is
    # left in a step)
    "rs_thr": ("sm90.cp_correct_rs", "gdn_cp_correct_rs_sm90", dict(store="threads")),
    "rs_direct": ("sm90.cp_correct_rs", "gdn_cp_correct_rs_sm90", dict(store="direct")),
    "rs_egthr": ("sm90.cp_correct_rs", "gdn_cp_correct_rs_sm90", dict(e_global=True, store="threads")),
    "rs_egdirect": ("sm90.cp_correct_rs", "gdn_cp_correct_rs_sm90", dict(e_global=True, store="direct")),
    # the 46th session: the split walk with M fetched two steps ahead (three buffer pairs): is the step waiting on its
    # loads? (no: 2.42 against 2.43 us per step on an H200)
    "split32_d3": ("gdn_cp_correct_sm90", dict(tma=True, BV=32, split_m=True, m_depth=3)),
    # rs_nostore's SASS has 3 of the 24 HGMMA (ptxas drops the products nothing reads), so it timed the loads; these
    # keep the chain: only the last state stored (rs_final), and the steps without their loads (rs_noload: operands
    # fetched for the first two steps only)
    "rs_final": ("sm90.cp_correct_rs", "gdn_cp_correct_rs_sm90", dict(store="final")),
    "rs_noload": ("sm90.cp_correct_rs", "gdn_cp_correct_rs_sm90", dict(store="final", reload=False)),
}
# error against float64 not checked: bf16's by design, or no products or no stores
DIAGNOSTIC = {"tma2p", "tma1p", "rs_loads", "rs_nostore", "rs_loadsonly", "rs_loadshi", "rs_egloads",
              "split32_nostore", "rs_final", "rs_noload"}
# measured and removed (benchmarks/results/H200_walk.md; the kernels in git history, 0967b5e): one_wait (the three
# products under one wait) and overlap (M_{j+1}'s split while step j's products run)


def variant(name):
    """(module, factory, keyword arguments, M loaded split) of a VARIANTS entry"""
    entry = VARIANTS[name]
    module, factory, params = ("sm90.cp_correct",) + entry if len(entry) == 2 else entry
    return module, factory, params, module.endswith("_rs") or bool(params.get("split_m"))


def split_transitions(cp_out, nseg):
    """cp_out with its M rows [nseg, 2 nseg) stored as the warm-up pass stores them for the split walks (each slot's
    fp32 bytes: bf16(M), then bf16(M - bf16(M)); tilelang_src/common/bf16_split.py split_slots)."""
    import torch

    out = cp_out.clone()
    m = cp_out[nseg:]  # [NSEG, HV, K, K]
    halves = out.view(torch.bfloat16).view(out.shape[0], out.shape[1], 2, out.shape[2], out.shape[3])[nseg:]
    hi = m.to(torch.bfloat16)
    halves[:, :, 0] = hi
    halves[:, :, 1] = (m - hi.float()).to(torch.bfloat16)
    return out


def walk_ref(h0, E, M, plan, num_segs, reverse):
    """float64 walk of one sequence (slots 0 .. num_segs - 1): the states the kernel writes to cp_h0."""
    import torch

    out = {}
    S = h0.double()  # [HV, K, V]
    fallback = (plan < 0).double()[:, :, None, None]  # [NSEG, HV, 1, 1]
    steps = range(num_segs - 2, -1, -1) if reverse else range(num_segs - 1)
    for j in steps:
        S = E[j].double() + fallback[j] * (M[j].double() @ S)
        out[j if reverse else j + 1] = S
    return out


def locate_errors(name, reverse, launch, cp_h0, want, tol=1e-4):
    """Print where one launch's states are off the float64 walk: per slot the count of elements off by more than tol
    (relative to the slot's largest value), their heads, and their row and column ranges."""
    for s, w in sorted(want.items()):
        diff = (cp_h0[s].double() - w).abs()  # [HV, K, V]
        bad = (diff > tol * w.abs().max()) | diff.isnan()
        n_bad = int(bad.sum())
        if not n_bad:
            continue
        hv, r, c = bad.nonzero(as_tuple=True)
        print(f"  {name} rev={reverse} launch {launch} slot {s}: {n_bad} off; heads {sorted(set(hv.tolist()))}; "
              f"rows {int(r.min())}-{int(r.max())} ({len(set(r.tolist()))}); cols {int(c.min())}-{int(c.max())} "
              f"({len(set(c.tolist()))}); worst {float(diff.nan_to_num(float('inf')).max()):.3e}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--heads", type=int, default=8, help="v-heads")
    ap.add_argument("--tokens", type=int, default=32768)
    ap.add_argument("--seg-tokens", type=int, default=2048)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--fallback-heads", type=int, default=None,
                    help="v-heads on the exact fallback (the others warmed up); default half of them")
    ap.add_argument("--detail", type=int, default=0,
                    help="launches per direction whose elements off the float64 walk are located (slot, head, "
                         "rows, columns); 0: one launch, the error only")
    ap.add_argument("--compile-only", action="store_true",
                    help="compile the variants into TileLang's cache and stop (several such processes at once, then "
                         "the run: the compiles in parallel)")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "tilelang_src"))
    import tilelang
    import torch

    import importlib

    HV, T_, L, K = args.heads, args.tokens, args.seg_tokens, 128
    num_segs = -(-T_ // L)
    NSEG = num_segs + 1  # slots: ceil(T / seg_tokens) + N
    gen = torch.Generator(device="cuda").manual_seed(0)
    cu = torch.tensor([0, T_], dtype=torch.int32, device="cuda")
    h0 = torch.randn(1, HV, K, K, device="cuda", generator=gen)
    # E rows [0, NSEG), M rows [NSEG, 2 NSEG); M scaled to a spectral norm about 0.9 so the walk stays bounded
    cp_out = torch.randn(2 * NSEG, HV, K, K, device="cuda", generator=gen)
    cp_out[NSEG:] *= 0.9 / (2 * K ** 0.5)
    plan = torch.full((NSEG, HV), -(L // 64), dtype=torch.int32, device="cuda")
    n_fallback = HV // 2 if args.fallback_heads is None else args.fallback_heads
    plan[:, : HV - n_fallback] = 3  # these heads warmed up (no M product used), the rest on the exact fallback
    print(f"walk: {HV} v-heads ({n_fallback} on the fallback), one sequence of {T_} tokens, {num_segs} segments of "
          f"{L} tokens ({num_segs - 1} steps), V // BV CTAs per head")
    rows = []
    cp_plain = cp_out
    cp_split = split_transitions(cp_out, NSEG)
    for name in args.variants:
        module, factory, params, split = variant(name)
        cp_out = cp_split if split else cp_plain
        kern = tilelang.compile(getattr(importlib.import_module(module), factory)(**params), target="cuda",
                                pass_configs={"tl.enable_fast_math": True})
        if args.compile_only:
            print(f"{name}: compiled", flush=True)
            continue
        errs = []
        for reverse in (0, 1):
            want = walk_ref(h0[0], cp_plain[:NSEG], cp_plain[NSEG:], plan, num_segs, reverse)
            err = 0.0
            for launch in range(max(args.detail, 1)):
                cp_h0 = torch.full((NSEG, HV, K, K), float("nan"), device="cuda")
                kern(cu, h0, plan, cp_out, cp_h0, T_, L, 1, 0, reverse)
                torch.cuda.synchronize()
                err = max([err] + [float((cp_h0[s].double() - w).norm() / w.norm()) for s, w in want.items()])
                if args.detail:
                    locate_errors(name, reverse, launch, cp_h0, want)
            errs.append(err)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        cp_h0 = torch.empty(NSEG, HV, K, K, device="cuda")
        for _ in range(5):
            kern(cu, h0, plan, cp_out, cp_h0, T_, L, 1, 0, 0)
        start.record()
        for _ in range(args.iters):
            kern(cu, h0, plan, cp_out, cp_h0, T_, L, 1, 0, 0)
        end.record()
        torch.cuda.synchronize()
        us = start.elapsed_time(end) * 1e3 / args.iters
        rows.append((name, us, us / max(num_segs - 1, 1), errs))
        print(f"{name:11s} {us:8.2f} us/launch  {rows[-1][2]:6.2f} us/step  "
              f"rel err fwd {errs[0]:.2e} rev {errs[1]:.2e}", flush=True)
    bad = [r[0] for r in rows if not max(r[3]) < 1e-4 and r[0] not in DIAGNOSTIC]
    if bad:
        print(f"walk: variants off the float64 walk: {bad}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
