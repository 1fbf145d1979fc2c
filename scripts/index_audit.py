#!/usr/bin/env python3
"""Audit of the global-memory index arithmetic of lowered TileLang kernels (int64 offsets).

A global offset such as (token * HV + head) * 128 + col passes 2^31 once T * HV * 128 does (1M tokens
at 16+ v-heads). After lowering, every load and store of a global buffer carries its flattened index;
`audit` walks them and reports

* violations: an Add/Sub/Mul/Div/Mod/Min/Max computed in a 32-bit (or narrower) integer anywhere in a
  global index. codegen.py fails the build on any.
* narrow scalars: 32-bit variables that enter global indices through a cast (token positions, loop
  counters, CTA coordinates), each with its definition. Their values must fit in int32; the op layer
  bounds them (csrc/ops/gdn_common.cpp, python/flashqla/validate.py, docs/errors.md "Size limits").

TMA loads take per-dimension int32 coordinates and 64-bit strides (the descriptor), so they never form a
flat offset; they are not global buffer loads in the lowered IR and are not audited here.

    python scripts/index_audit.py [--kernel gdn_fwd] [--dtype bf16]   # lower and print the report
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _narrow_str(dtype: str) -> bool:
    base = dtype.split("x")[0]  # "int32x4" -> "int32"
    return base.startswith(("int", "uint")) and base not in ("int64", "uint64")


def audit(prim_func) -> dict:
    """Returns {"global_accesses": n, "violations": [...], "narrow_scalars": {name: [definitions]}}."""
    from tilelang import tvm

    tir = tvm.tirx
    arith = tuple(getattr(tir, n) for n in ("Add", "Sub", "Mul", "Div", "Mod", "FloorDiv", "FloorMod", "Min", "Max"))
    definitions: dict[str, set[str]] = {}
    accesses: list[tuple[str, object]] = []

    def collect(node):
        if isinstance(node, tir.Bind):
            definitions.setdefault(node.var.name, set()).add(str(node.value))
        elif isinstance(node, tir.For):
            definitions.setdefault(node.loop_var.name, set()).add(f"loop counter, extent {node.extent}")
        elif isinstance(node, (tir.BufferLoad, tir.BufferStore)) and node.buffer.scope() == "global":
            for index in node.indices:
                accesses.append((node.buffer.name, index))

    tvm.tirx.stmt_functor.post_order_visit(prim_func.body, collect)

    violations: list[str] = []
    narrow: dict[str, list[str]] = {}
    for name, index in accesses:
        def check(node, name=name, index=index):
            if isinstance(node, arith) and _narrow_str(str(node.dtype)):
                violations.append(f"{name}[...]: 32-bit {type(node).__name__} `{node}` in index `{index}`")
            elif isinstance(node, tir.Var) and _narrow_str(str(node.dtype)):
                narrow[node.name] = sorted(definitions.get(node.name, {"kernel parameter or thread index"}))

        tvm.tirx.stmt_functor.post_order_visit(index, check)
    return {"global_accesses": len(accesses), "violations": sorted(set(violations)),
            "narrow_scalars": dict(sorted(narrow.items()))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernel", default=None, help="only this kernel (gdn_chunk_prep, gdn_fwd, ...)")
    ap.add_argument("--dtype", default="bf16")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import codegen  # noqa: E402

    variants = codegen._load_variants()
    failed = False
    for i, v in enumerate(variants):
        if (args.kernel and v.kernel != args.kernel) or dict(v.key).get("dtype") != args.dtype:
            continue
        report = codegen._lower_one(i)["meta"]["index_audit"]
        failed |= bool(report["violations"])
        print(f"== {v.symbol}: {report['global_accesses']} global accesses, "
              f"{len(report['violations'])} with 32-bit arithmetic")
        print(json.dumps(report, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
