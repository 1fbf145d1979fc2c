#!/usr/bin/env python3
"""Where a kernel's time goes, from an Nsight Compute SASS page (scripts/ncu_profile.sh writes it): the
instructions cut into regions at every block or named barrier and every wgmma wait, and for each region that
holds at least 1% of the warp-state samples: its share of the samples and of the shared-memory wavefronts,
the instructions it executed (most frequent opcodes) and its top stall reasons.

    python3 scripts/ncu_regions.py OUTDIR/chunk_prep.sass.csv [--min 1.0]
"""

from __future__ import annotations

import argparse
import collections
import csv
import sys


SAMPLES = "Warp Stall Sampling (All Samples)"


def number(row: list[str], col: dict[str, int], name: str) -> float:
    try:
        return float(row[col[name]].replace(",", ""))
    except (KeyError, ValueError):
        return 0.0


def cut_regions(header: list[str], data: list[list[str]]) -> list[dict]:
    """The SASS rows cut after every block or named barrier, wgmma wait and EXIT: per region its first and
    last row, warp-state samples, shared wavefronts, executed instructions, opcodes and stall reasons."""
    col = {h: i for i, h in enumerate(header)}
    stall_cols = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]

    def fresh(start: int) -> dict:
        return dict(start=start, samples=0.0, wf=0.0, executed=0.0, ops=collections.Counter(),
                    stalls=collections.Counter())

    regions, cur = [], fresh(0)
    for n, r in enumerate(data):
        src = r[col["Source"]].strip()
        words = src.split()
        op = (words[1] if words and words[0].startswith("@") and len(words) > 1 else (words[0] if words else ""))
        executed = number(r, col, "Instructions Executed")
        cur["samples"] += number(r, col, SAMPLES)
        cur["wf"] += number(r, col, "L1 Wavefronts Shared")
        cur["executed"] += executed
        cur["ops"][op.split(".")[0]] += executed
        for c in stall_cols:
            cur["stalls"][c[len("stall_"):]] += number(r, col, c)
        if op.startswith(("BAR", "EXIT", "WARPGROUP.DEPBAR")) or n == len(data) - 1:
            cur["end"], cur["last"] = n, src
            regions.append(cur)
            cur = fresh(n + 1)
    return regions


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sass_csv")
    ap.add_argument("--min", type=float, default=1.0, help="smallest share of the samples shown, in percent")
    args = ap.parse_args()
    rows = list(csv.reader(open(args.sass_csv)))
    header, data = rows[1], rows[2:]  # rows[0] names the kernel
    regions = cut_regions(header, data)
    total = sum(g["samples"] for g in regions) or 1.0
    total_wf = sum(g["wf"] for g in regions) or 1.0
    print(f"{rows[0][1]}: {total:.0f} samples, {total_wf:.0f} shared wavefronts")
    print("instructions  samples  wavefronts  executed  opcodes | stalls | region ends with")
    for g in regions:
        share = 100 * g["samples"] / total
        if share < args.min:
            continue
        ops = ", ".join(f"{k} {v / 1e6:.1f}M" for k, v in g["ops"].most_common(5))
        stalls = ", ".join(f"{k} {100 * v / max(g['samples'], 1):.0f}%" for k, v in g["stalls"].most_common(3))
        print(f"{g['start']:5d}-{g['end']:5d}  {share:5.1f}%  {100 * g['wf'] / total_wf:5.1f}%  "
              f"{g['executed'] / 1e6:7.2f}M  {ops} | {stalls} | {g['last'][:40]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
