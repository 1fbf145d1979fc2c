#!/usr/bin/env python3
"""flashqla's time per shape from several bench_gdn.py JSON files side by side, and the first over the last:

    python3 scripts/device_calls/ms_table.py TITLE LABEL=FILE.json [LABEL=FILE.json ...]
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    title, pairs = sys.argv[1], [a.split("=", 1) for a in sys.argv[2:]]
    rows: dict[tuple, dict[str, float]] = {}
    for label, path in pairs:
        try:
            data = json.load(open(path))
        except (OSError, ValueError) as e:
            print(title, label, "no json:", e)
            continue
        for r in data["rows"]:
            rows.setdefault((r["h_qk"], r["h_v"], r["seqlens"]), {})[label] = r["ms"].get("flashqla")
    labels = [label for label, _ in pairs]
    print(f"{title}: ms at {' / '.join(labels)}, and {labels[0]} / {labels[-1]}")
    for key, ms in rows.items():
        t = [ms.get(label) or float("nan") for label in labels]
        print(key, " ".join(f"{x:.3f}" for x in t), f" x{t[0] / t[-1]:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
