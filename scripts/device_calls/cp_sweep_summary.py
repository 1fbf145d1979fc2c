#!/usr/bin/env python3
"""One line per shape from benchmarks/cp_sweep.py's log: the automatic choice's forward / backward ms, one segment's
(cp 0), and the fastest forced segment length for the forward, the backward and their sum (a training step's kernels).

    python3 scripts/device_calls/cp_sweep_summary.py LOG
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict


def main() -> int:
    rows: dict = defaultdict(dict)  # shape -> cp -> (fwd, bwd)
    for line in open(sys.argv[1]):
        m = re.match(r"\s*(\(\d+,\d+\) \S+)\s+(-?\d+)\s+([\d.]+)\s+([\d.]+)\s*$", line)
        if m:
            rows[m.group(1)][int(m.group(2))] = (float(m.group(3)), float(m.group(4)))
    print(f"{'shape':>20} | {'auto f/b':>13} | {'cp0 f/b':>13} | {'best fwd':>11} | {'best bwd':>11} | {'best sum':>11}"
          f" | auto/best sum")
    for shape, by_cp in rows.items():
        auto, one = by_cp.get(-1, (0, 0)), by_cp.get(0, (0, 0))
        forced = {cp: t for cp, t in by_cp.items() if cp >= 0}
        bf = min(forced, key=lambda c: forced[c][0])
        bb = min(forced, key=lambda c: forced[c][1])
        bs = min(forced, key=lambda c: sum(forced[c]))
        print(f"{shape:>20} | {auto[0]:5.3f}/{auto[1]:6.3f} | {one[0]:5.3f}/{one[1]:6.3f} | {bf:>3} {forced[bf][0]:6.3f} | "
              f"{bb:>3} {forced[bb][1]:6.3f} | {bs:>3} {sum(forced[bs]):6.3f} | {sum(auto) / sum(forced[bs]):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
