#!/usr/bin/env python3
"""The forward op's outputs of one installed wheel, saved, and two such files compared bit for bit: a kernel change
that keeps the same products (a new code layout, a register split) should leave o and the final state unchanged.

    PYTHONPATH=SITE_A python3 scripts/device_calls/op_outputs.py save A.pt [--heads 32,32 16,32] [--mixes 8192x4 ...]
    PYTHONPATH=SITE_B python3 scripts/device_calls/op_outputs.py save B.pt ...
    python3 scripts/device_calls/op_outputs.py compare A.pt B.pt

Inputs: bench_gdn.py's (anchors.md's), with a fixed seed per shape (the same in every process).
FLASHQLA_FWD_NOPREP and the other dispatch settings reach the op from the environment.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_gdn import make_inputs  # noqa: E402  (the benchmark's inputs: anchors.md's, with h0 and heads that do not decay)


def parse_mix(mix: str) -> list[int]:
    """LENGTHxCOUNT (8192x4), 1xLENGTH (one sequence) or LENGTH+LENGTH..."""
    if mix.startswith("1x"):
        return [int(mix[2:])]
    if "x" in mix:
        length, count = mix.split("x")
        return [int(length)] * int(count)
    return [int(p) for p in mix.split("+")]


def save(path: str, heads: list[str], mixes: list[str]) -> int:
    import flashqla

    results = {"source_commit": flashqla.build_manifest().get("source_commit")}
    for h in heads:
        hq, hv = (int(x) for x in h.split(","))
        for i, mix in enumerate(mixes):
            lens = parse_mix(mix)
            x = make_inputs(lens, hq, hv, seed=1000 * hq + hv + i)
            o, ht = flashqla.chunk_gated_delta_rule(**x, output_final_state=True, cu_seqlens_cpu=x["cu_seqlens"].cpu())
            torch.cuda.synchronize()
            results[f"{h} {mix}"] = (o.cpu(), ht.cpu())
    torch.save(results, path)
    print(f"saved {len(results) - 1} shapes from wheel {results['source_commit']} to {path}")
    return 0


def compare(path_a: str, path_b: str) -> int:
    a, b = torch.load(path_a), torch.load(path_b)
    print(f"{a['source_commit']} against {b['source_commit']}")
    differ = 0
    for key in a:
        if key == "source_commit":
            continue
        cells = []
        for name, x, y in zip(("o", "ht"), a[key], b[key]):
            same = torch.equal(x, y)
            gap = (x.double() - y.double()).abs().max().item() / max(x.double().abs().max().item(), 1e-30)
            differ += not same
            cells.append(f"{name} {'bitwise equal' if same else f'differs (max gap {gap:.2e} of its largest)'}")
        print(f"{key:>24}: " + ", ".join(cells))
    print(f"{differ} tensors differ")
    return 1 if differ else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("save")
    s.add_argument("path")
    s.add_argument("--heads", nargs="+", default=["32,32"])
    s.add_argument("--mixes", nargs="+", default=["8192x4", "4096x8", "2048x4", "1x8192"])
    c = sub.add_parser("compare")
    c.add_argument("a")
    c.add_argument("b")
    args = ap.parse_args()
    if args.cmd == "save":
        return save(args.path, args.heads, args.mixes)
    return compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
