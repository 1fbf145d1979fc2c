#!/usr/bin/env python3
"""Fits the host's segment model (csrc/ops/segment_plan.cpp, ported here line for line) to a benchmarks/cp_sweep.py
log: for each candidate set of constants, the plan the model would choose at every shape of the log, that plan's
measured time, and the geometric mean of its ratio to the fastest forced plan (the regret). Prints the current
constants' regret, the best grid points, and per shape what the chosen constants pick.

    python benchmarks/cp_model_fit.py benchmarks/results/H200_cp_sweep_a1bdf84.log \
        benchmarks/results/H200_cp_sweep_multi_a611c11.log
    python benchmarks/cp_model_fit.py --keep benchmarks/results/H200_cp_sweep_keep_a993033.log

--keep: logs of `cp_sweep.py --keep` (the backward reading the forward's kept chunk states, no recompute beside its
state-gradient pass): the backward's warm-up share alone is fitted there.

The host knows T and N only (never the lengths: no device-to-host copy), so the model assumes N equal lengths; mixes
of unequal lengths are fitted as such.

The forward chooses a segment length and a V width (64, or 128 at kChunkTimeBv128 chunk times); the backward's
state-gradient pass a segment length (its recompute plans as the forward; the sweep forced both to one length).
"""

from __future__ import annotations

import itertools
import math
import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shapes import parse_lengths  # noqa: E402

SMS = 132
MIN_SEG_CHUNKS = 4
MIN_GAIN = 0.9
BV128_RATIO = 1.75


def read_sweeps(paths: list) -> dict:
    """(h_qk, h_v, T, N, mix) -> cp -> [fwd, fwd64, fwd128, bwd] ms, from one or more logs"""
    rows: dict = defaultdict(dict)
    for path in paths:
        for line in open(path):
            m = re.match(r"\s*\((\d+),(\d+)\) (\S+)\s+(-?\d+)((?:\s+[\d.]+)+)\s*$", line)
            if m:
                lengths = parse_lengths(m.group(3))
                key = (int(m.group(1)), int(m.group(2)), sum(lengths), len(lengths), m.group(3))
                rows[key][int(m.group(4))] = [float(t) for t in m.group(5).split()]
    return rows


def plan(T: int, N: int, heads: int, share: float, step: float, longest_share: float,
         max_seqlen: int = 0) -> tuple[int, float]:
    """plan_segments: (segment chunks, 0 for one segment; the model's cost in chunk times); max_seqlen: the op's
    hint (0: unknown)"""
    total = max(-(-T // 64), 1)
    chunks = max(total // max(N, 1), 1)
    if max_seqlen:
        longest = min(total, -(-max_seqlen // 64))
    else:
        longest = min(total, max(chunks, math.floor(longest_share * chunks)))

    def waves(ctas: float) -> float:
        return math.ceil(ctas / SMS)

    one = max(longest, chunks * waves(N * heads)) if max_seqlen else longest * waves(N * heads)
    best, best_L, L = one * MIN_GAIN, 0, MIN_SEG_CHUNKS
    while L < longest:
        ctas = N * -(-chunks // L) * heads
        cost = L * (waves(ctas) + waves(2 * share * ctas)) + -(-longest // L) * step
        if cost < best:
            best, best_L = cost, L
        L *= 2
    return (best_L, best) if best_L else (0, one)


def fwd_choice(T: int, N: int, HV: int, share: float, step: float, longest_share: float,
               max_seqlen: int = 0) -> tuple[int, int]:
    """plan_fwd: (segment chunks, V width)"""
    narrow = plan(T, N, 2 * HV, share, step, longest_share, max_seqlen)
    wide = plan(T, N, HV, share, step, longest_share, max_seqlen)
    return (wide[0], 128) if wide[1] * BV128_RATIO < narrow[1] * MIN_GAIN else (narrow[0], 64)


def regrets(rows: dict, share_f: float, share_b: float, step: float, longest_share: float, hint: bool = False) -> tuple:
    """geometric-mean regret of the forward and the backward, and per shape (key, fwd choice, bwd choice, ratios);
    hint: the ops get the longest sequence (max_seqlen)"""
    lf = lb = 0.0
    per_shape = []
    for key, by_cp in rows.items():
        hq, hv, T, N, mix = key
        max_seqlen = max(parse_lengths(mix)) if hint else 0
        fwd = {(cp, bv): t[1 + i] for cp, t in by_cp.items() if cp >= 0 for i, bv in enumerate((64, 128))}
        bwd = {cp: t[-1] for cp, t in by_cp.items() if cp >= 0}
        cf = fwd_choice(T, N, hv, share_f, step, longest_share, max_seqlen)
        cb = plan(T, N, 2 * hv, share_b, step, longest_share, max_seqlen)[0]
        rf = fwd.get(cf, 1.2 * min(fwd.values())) / min(fwd.values())  # a plan the sweep did not force: 1.2
        rb = bwd.get(cb, 1.2 * min(bwd.values())) / min(bwd.values())
        lf, lb = lf + math.log(rf), lb + math.log(rb)
        per_shape.append((key, cf, cb, rf, rb))
    return math.exp(lf / len(rows)), math.exp(lb / len(rows)), per_shape


def fit_kept(paths: list) -> int:
    """The backward's warm-up share with the chunk states kept: its regret per share, and the shapes where the share
    of the recompute case (0.5) and the forward's (0.25) choose differently."""
    rows = read_sweeps(paths)
    fits = {share: regrets(rows, 0.25, share, 5.0, 1.25) for share in (0.125, 0.25, 0.375, 0.5, 0.75, 1.0)}
    for share, (_, regret, _) in fits.items():
        print(f"kept states, backward share {share}: regret {regret:.4f} ({len(rows)} shapes)")
    half, quarter = fits[0.5][2], fits[0.25][2]
    print("where they differ: share 0.5 (segment chunks, x fastest) | share 0.25")
    for (key, _, cb_h, _, rb_h), (_, _, cb_q, _, rb_q) in zip(half, quarter):
        if cb_h != cb_q:
            print(f"  ({key[0]},{key[1]}) {key[4]:12} {cb_h:4} x{rb_h:.3f} | {cb_q:4} x{rb_q:.3f}")
    return 0


def main() -> int:
    if sys.argv[1:2] == ["--keep"]:
        return fit_kept(sys.argv[2:])
    rows = read_sweeps(sys.argv[1:])
    f, b, _ = regrets(rows, 0.25, 0.25, 1.5, 1.0)
    print(f"constants before (share 0.25, step 1.5, equal lengths): regret forward {f:.4f}, backward {b:.4f} "
          f"({len(rows)} shapes)")
    grid = []
    for share_f, share_b, step, longest in itertools.product([0.125, 0.25, 0.375, 0.5], [0.25, 0.5, 0.75, 1.0],
                                                             [1.5, 2, 3, 4, 5, 5.5, 6, 8], [1.0, 1.25, 1.5, 2.0]):
        f, b, _ = regrets(rows, share_f, share_b, step, longest)
        grid.append((f * b, f, b, share_f, share_b, step, longest))
    grid.sort()
    print("best grid points (forward x backward regret, forward, backward, share fwd, share bwd, step, longest):")
    for g in grid[:8]:
        print("  " + "  ".join(f"{x:.4f}" if isinstance(x, float) else str(x) for x in g))
    f, b, per_shape = regrets(rows, 0.25, 0.5, 5.0, 1.25)
    print(f"chosen (share 0.25 / 0.5, step 5, longest 1.25): regret forward {f:.4f}, backward {b:.4f}; per shape:")
    for (hq, hv, _, _, mix), cf, cb, rf, rb in per_shape:
        print(f"  ({hq},{hv}) {mix:12} forward {str(cf):10} x{rf:.3f} | backward {cb:4} x{rb:.3f}")
    f, b, per_shape = regrets(rows, 0.25, 0.5, 5.0, 1.25, hint=True)
    print(f"the same with the longest sequence known (max_seqlen): regret forward {f:.4f}, backward {b:.4f}; "
          "shapes above 4%:")
    for (hq, hv, _, _, mix), cf, cb, rf, rb in per_shape:
        if max(rf, rb) > 1.04:
            print(f"  ({hq},{hv}) {mix:12} forward {str(cf):10} x{rf:.3f} | backward {cb:4} x{rb:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
