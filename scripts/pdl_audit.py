#!/usr/bin/env python3
"""Audit of the generated CUDA of a kernel that uses programmatic dependent launch (tilelang_src/common/
grid_dependency.py): launched with programmatic stream serialization, it may run while the kernel before it on the
stream is still writing, so every global-memory access must come after its grid-dependency wait.

Checked in the kernel's body (the `__global__` definition):
  1. exactly one `cudaGridDependencySynchronize();`, at the body's top level (brace depth 1: not inside a branch
     that some threads skip);
  2. before it, no indexing of a pointer parameter (`name[`), no pointer arithmetic on one (`name +`), no TMA copy
     or other `tl::` call that takes a tensor-map parameter except the descriptor prefetch (which reads the
     parameter, not the tensor), and no `__ldg` anywhere (TileLang refuses it with PDL: nvcc may hoist read-only
     loads over the wait).
codegen.py fails the build on a violation.

    python scripts/pdl_audit.py FILE.cu      # print the violations
"""

from __future__ import annotations

import re
import sys

WAIT = "cudaGridDependencySynchronize();"
KERNEL = re.compile(r'extern "C" __global__ void (?:__launch_bounds__\([^)]*\) )?(\w+)\(([^)]*)\) \{')
POINTER_PARAM = re.compile(r"\*\s*(?:__restrict__\s+)?(\w+)$")
DESC_PARAM = re.compile(r"CUtensorMap\s+(\w+)$")


def pdl_violations(source: str) -> list[str]:
    """One message per violation (line numbers 1-based); none for a kernel without the wait."""
    if WAIT not in source:
        return []
    lines = source.split("\n")
    start = next((n for n, line in enumerate(lines) if KERNEL.match(line)), None)
    if start is None:
        return ["no __global__ kernel definition found"]
    params = [p.strip() for p in KERNEL.match(lines[start]).group(2).split(",")]
    pointers = [m.group(1) for p in params if (m := POINTER_PARAM.search(p))]
    descs = [m.group(1) for p in params if (m := DESC_PARAM.search(p))]
    waits = [n for n in range(start + 1, len(lines)) if lines[n].strip() == WAIT]
    if len(waits) != 1:
        return [f"{len(waits)} grid-dependency waits in the kernel body (one expected)"]
    wait = waits[0]
    out = []
    depth = sum(line.count("{") - line.count("}") for line in lines[start:wait])
    if depth != 1:
        out.append(f"line {wait + 1}: the grid-dependency wait is nested (some threads may skip it)")
    access = re.compile(r"\b(" + "|".join(map(re.escape, pointers)) + r")\s*(\[|\+)") if pointers else None
    desc_use = re.compile(r"\b(" + "|".join(map(re.escape, descs)) + r")\b") if descs else None
    for n in range(start + 1, wait):
        line = lines[n]
        if access is not None and (m := access.search(line)):
            out.append(f"line {n + 1}: {m.group(1)} accessed before the grid-dependency wait")
        if desc_use is not None and desc_use.search(line) and "prefetch_tma_descriptor" not in line:
            out.append(f"line {n + 1}: a tensor map used before the grid-dependency wait")
    out += [f"line {n + 1}: __ldg in a kernel with a grid-dependency wait" for n, line in enumerate(lines)
            if "__ldg(" in line]
    return out


def main() -> int:
    bad = 0
    for path in sys.argv[1:]:
        for msg in pdl_violations(open(path).read()):
            print(f"{path}: {msg}")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
