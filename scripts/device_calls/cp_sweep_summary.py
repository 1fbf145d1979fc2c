#!/usr/bin/env python3
"""One line per shape from benchmarks/cp_sweep.py's log: the automatic choice's forward and backward ms, the fastest
forced (segment length, V width) of the forward and segment length of the backward, and auto / best for each.

    python3 scripts/device_calls/cp_sweep_summary.py LOG
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict


def read(path: str) -> dict:
    """A cp_sweep.py log: shape -> cp -> [fwd, fwd64, (fwd128,) bwd] ms"""
    rows: dict = defaultdict(dict)
    for line in open(path):
        m = re.match(r"\s*(\(\d+,\d+\) \S+)\s+(-?\d+)((?:\s+[\d.]+)+)\s*$", line)
        if m:
            rows[m.group(1)][int(m.group(2))] = [float(t) for t in m.group(3).split()]
    return rows


def main() -> int:
    rows = read(sys.argv[1])
    print(f"{'shape':>20} | {'auto fwd':>8} {'best (cp, bv)':>16} {'a/b':>5} | {'auto bwd':>8} {'best cp':>12} {'a/b':>5}")
    for shape, by_cp in rows.items():
        if -1 not in by_cp:
            continue
        auto = by_cp[-1]
        fwd = {(cp, bv): t[1 + i] for cp, t in by_cp.items() if cp >= 0 for i, bv in enumerate((64, 128)[:len(t) - 2])}
        bwd = {cp: t[-1] for cp, t in by_cp.items() if cp >= 0}
        bf, bb = min(fwd, key=fwd.get), min(bwd, key=bwd.get)
        print(f"{shape:>20} | {auto[0]:8.3f} {str(bf):>9} {fwd[bf]:6.3f} {auto[0] / fwd[bf]:5.2f} | "
              f"{auto[-1]:8.3f} {bb:>5} {bwd[bb]:6.3f} {auto[-1] / bwd[bb]:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
