#!/usr/bin/env python3
"""Fits the host's segment model (csrc/ops/segment_plan.cpp, ported here line for line) to a benchmarks/cp_sweep.py
log: for each candidate set of constants, the plan the model would choose at every shape of the log, that plan's
measured time, and the geometric mean of its ratio to the fastest forced plan (the regret). Prints the current
constants' regret, the best grid points, and per shape what the chosen constants pick.

    python benchmarks/cp_model_fit.py benchmarks/results/H200_cp_sweep_a1bdf84.log

The forward chooses a segment length and a V width (64, or 128 at kChunkTimeBv128 chunk times); the backward's
state-gradient pass a segment length (its recompute plans as the forward; the sweep forced both to one length).
"""

from __future__ import annotations

import itertools
import math
import re
import sys
from collections import defaultdict

SMS = 132
MIN_SEG_CHUNKS = 4
MIN_GAIN = 0.9
BV128_RATIO = 1.75


def read_sweep(path: str) -> dict:
    """(h_qk, h_v, T, N, mix) -> cp -> [fwd, fwd64, fwd128, bwd] ms"""
    rows: dict = defaultdict(dict)
    for line in open(path):
        m = re.match(r"\s*\((\d+),(\d+)\) (\d+)x(\d+)\s+(-?\d+)((?:\s+[\d.]+)+)\s*$", line)
        if m:
            hq, hv, a, b, cp = (int(m.group(i)) for i in range(1, 6))
            T, N = (b, 1) if a == 1 else (a * b, b)  # "1x4096": one sequence; "2048x4": four of 2048
            rows[(hq, hv, T, N, f"{a}x{b}")][cp] = [float(t) for t in m.group(6).split()]
    return rows


def plan(T: int, N: int, heads: int, share: float, step: float) -> tuple[int, float]:
    """plan_segments: (segment chunks, 0 for one segment; the model's cost in chunk times)"""
    chunks = max(-(-T // 64) // max(N, 1), 1)

    def waves(ctas: float) -> float:
        return math.ceil(ctas / SMS)

    one = chunks * waves(N * heads)
    best, best_L, L = one * MIN_GAIN, 0, MIN_SEG_CHUNKS
    while L < chunks:
        segs = -(-chunks // L)
        ctas = N * segs * heads
        cost = L * (waves(ctas) + waves(2 * share * ctas)) + segs * step
        if cost < best:
            best, best_L = cost, L
        L *= 2
    return (best_L, best) if best_L else (0, one)


def fwd_choice(T: int, N: int, HV: int, share: float, step: float) -> tuple[int, int]:
    """plan_fwd: (segment chunks, V width)"""
    narrow, wide = plan(T, N, 2 * HV, share, step), plan(T, N, HV, share, step)
    return (wide[0], 128) if wide[1] * BV128_RATIO < narrow[1] * MIN_GAIN else (narrow[0], 64)


def regrets(rows: dict, share_f: float, share_b: float, step: float) -> tuple[float, float, list]:
    """geometric-mean regret of the forward and the backward, and per shape (key, fwd choice, bwd choice, ratios)"""
    lf = lb = 0.0
    per_shape = []
    for key, by_cp in rows.items():
        hq, hv, T, N, _ = key
        fwd = {(cp, bv): t[1 + i] for cp, t in by_cp.items() if cp >= 0 for i, bv in enumerate((64, 128))}
        bwd = {cp: t[-1] for cp, t in by_cp.items() if cp >= 0}
        cf, cb = fwd_choice(T, N, hv, share_f, step), plan(T, N, 2 * hv, share_b, step)[0]
        rf = fwd.get(cf, 1.2 * min(fwd.values())) / min(fwd.values())  # a plan the sweep did not force: 1.2
        rb = bwd.get(cb, 1.2 * min(bwd.values())) / min(bwd.values())
        lf, lb = lf + math.log(rf), lb + math.log(rb)
        per_shape.append((key, cf, cb, rf, rb))
    return math.exp(lf / len(rows)), math.exp(lb / len(rows)), per_shape


def main() -> int:
    rows = read_sweep(sys.argv[1])
    f, b, _ = regrets(rows, 0.25, 0.25, 1.5)
    print(f"constants before (share 0.25, step 1.5): regret forward {f:.4f}, backward {b:.4f} ({len(rows)} shapes)")
    grid = []
    for share_f, share_b, step in itertools.product([0.125, 0.25, 0.375, 0.5], [0.25, 0.5, 0.75, 1.0],
                                                    [1.5, 2, 3, 4, 5, 5.5, 6, 8, 10]):
        f, b, _ = regrets(rows, share_f, share_b, step)
        grid.append((f * b, f, b, share_f, share_b, step))
    grid.sort()
    print("best grid points (forward x backward regret, forward, backward, share fwd, share bwd, step):")
    for g in grid[:8]:
        print("  " + "  ".join(f"{x:.4f}" if isinstance(x, float) else str(x) for x in g))
    f, b, per_shape = regrets(rows, 0.25, 0.5, 5.5)
    print(f"chosen (share 0.25 / 0.5, step 5.5): regret forward {f:.4f}, backward {b:.4f}")
    for (hq, hv, _, _, mix), cf, cb, rf, rb in per_shape:
        print(f"  ({hq},{hv}) {mix:8} forward {str(cf):10} x{rf:.3f} | backward {cb:4} x{rb:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
