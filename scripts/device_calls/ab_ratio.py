#!/usr/bin/env python3
"""flashqla's time per shape under a candidate setting over the base's (the mean of the base's runs before and after
it), per shape and by geomean, from bench_gdn.py JSON files (44th session):

    python3 scripts/device_calls/ab_ratio.py TITLE CAND=FILE.json BASE=FILE.json [BASE=FILE.json ...]
"""

from __future__ import annotations

import json
import math
import sys


def times(path: str) -> dict[tuple, float]:
    rows = json.load(open(path))["rows"]
    return {(r["h_qk"], r["h_v"], r["seqlens"]): r["ms"]["flashqla"] for r in rows if r["ms"].get("flashqla")}


def main() -> int:
    title, (cand, *bases) = sys.argv[1], [a.split("=", 1) for a in sys.argv[2:]]
    new, old = times(cand[1]), [times(path) for _, path in bases]
    ratios = []
    for key, ms in new.items():
        base = [b[key] for b in old if key in b]
        if not base:
            continue
        r = ms / (sum(base) / len(base))
        ratios.append(r)
        print(f"{title} {key} {cand[0]} {ms:.3f} base {' '.join(f'{b:.3f}' for b in base)}  x{r:.3f}")
    if ratios:
        geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(f"{title}: {cand[0]} / base geomean x{geo:.3f} ({min(ratios):.3f}-{max(ratios):.3f}) over {len(ratios)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
