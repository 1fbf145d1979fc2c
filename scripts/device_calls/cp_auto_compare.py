#!/usr/bin/env python3
"""The automatic plan of new wheels against an earlier full sweep (benchmarks/cp_sweep.py logs): per shape, the old
log's automatic forward / backward ms and its fastest forced plan, then each new log's automatic ms; last, the
geometric mean of each new log's time over the old fastest.

    python3 scripts/device_calls/cp_auto_compare.py OLD_LOG NEW_LOG [NEW_LOG ...]
"""

from __future__ import annotations

import math
import sys

from cp_sweep_summary import read  # the same directory: the log reader


def main() -> int:
    old, news = read(sys.argv[1]), [read(p) for p in sys.argv[2:]]
    print(f"{'shape':>20} | {'old auto':>13} | {'old best':>13} | " + " | ".join(f"{'new' + str(i):>13}"
                                                                             for i in range(len(news))))
    logs = [[0.0, 0.0] for _ in news]
    count = 0
    for shape, by_cp in old.items():
        if -1 not in by_cp or any(shape not in n or -1 not in n[shape] for n in news):
            continue
        bf = min(t[c] for cp, t in by_cp.items() if cp >= 0 for c in range(1, len(t) - 1))
        bb = min(t[-1] for cp, t in by_cp.items() if cp >= 0)
        cells = []
        for i, n in enumerate(news):
            f, b = n[shape][-1][0], n[shape][-1][-1]
            logs[i][0] += math.log(f / bf)
            logs[i][1] += math.log(b / bb)
            cells.append(f"{f:5.3f}/{b:6.3f}")
        count += 1
        print(f"{shape:>20} | {by_cp[-1][0]:5.3f}/{by_cp[-1][-1]:6.3f} | {bf:5.3f}/{bb:6.3f} | " + " | ".join(cells))
    for i, (lf, lb) in enumerate(logs):
        print(f"new{i}: geomean over the old fastest forced plan: forward {math.exp(lf / count):.3f}, "
              f"backward {math.exp(lb / count):.3f} ({count} shapes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
