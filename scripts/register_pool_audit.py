#!/usr/bin/env python3
"""Audit of the generated CUDA of a warp-specialized kernel: its warpgroups' setmaxnreg values must fit the
registers the CTA is launched with.

A CTA launched with `__launch_bounds__(T, 1)` gets at most R = min(255, 65536 / T rounded down to 8)
registers per thread, R x T in all. `setmaxnreg.dec` (tl::warpgroup_reg_dealloc) returns a warpgroup's
registers to that pool and `setmaxnreg.inc` (tl::warpgroup_reg_alloc) waits until the pool holds enough:
when the warpgroups' values sum to more than R x T / 128, some warpgroup waits forever. The tenth session's
first warp-specialized chunk gradient (384 threads, 240 + 232 + 40 > 3 x 168) hung that way on the H200
(benchmarks/results/H200_bwdc_ws.md). The pool may be smaller still when ptxas gives the kernel fewer
registers than R, so passing is necessary, not sufficient.

codegen.py fails the build on a violation. Kernels without setmaxnreg, and kernels whose setmaxnreg count
differs from their number of warpgroups (then the sum means nothing), pass with a note.

    python scripts/register_pool_audit.py FILE.cu      # print the audit
"""

from __future__ import annotations

import re
import sys

LAUNCH_BOUNDS = re.compile(r"__launch_bounds__\((\d+)(?:,\s*\d+)?\)")
SETMAXNREG = re.compile(r"tl::warpgroup_reg_(alloc|dealloc)<(\d+)>")


def register_pool(source: str) -> dict:
    """{threads, regs_per_thread, per_warpgroup, total, budget, violation}: violation is a message or None."""
    m = LAUNCH_BOUNDS.search(source)
    values = [int(v) for _, v in SETMAXNREG.findall(source)]
    if m is None or not values:
        return {"threads": int(m.group(1)) if m else None, "per_warpgroup": values, "violation": None,
                "note": "no setmaxnreg" if not values else "no launch bounds"}
    threads = int(m.group(1))
    regs = min(255, (65536 // threads) // 8 * 8)
    groups = threads // 128
    out = {"threads": threads, "regs_per_thread": regs, "per_warpgroup": values, "total": sum(values),
           "budget": regs * groups, "violation": None, "note": ""}
    if len(values) != groups:
        out["note"] = f"{len(values)} setmaxnreg for {groups} warpgroups: not summed"
        return out
    if sum(values) > regs * groups:
        out["violation"] = (f"setmaxnreg values {' + '.join(map(str, values))} = {sum(values)} exceed the "
                            f"{groups} warpgroups' launch registers {groups} x {regs} = {regs * groups}: "
                            "setmaxnreg.inc would wait forever")
    return out


def main() -> int:
    for path in sys.argv[1:]:
        print(path, register_pool(open(path).read()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
