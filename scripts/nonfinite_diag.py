#!/usr/bin/env python3
"""Which outputs, and which of their rows outside sequence 1, change when a NaN is put into sequence 1 or
into the padding tail, on the layout of tests/test_nonfinite.py (lengths 130, 200, 70 and 30 padding tokens).
A GPU diagnostic for NaN isolation (docs/bwdc_pipe.md used it to find where the chunk-gradient kernel's TMA
loads leaked); the tests themselves only say pass or fail.

    PYTHONPATH=<site with flashqla> python scripts/nonfinite_diag.py k,v      # (2, 8) heads
    HV=2 PYTHONPATH=<site with flashqla> python scripts/nonfinite_diag.py v   # group of one v-head

Prints one line per experiment: "clean", or per output the rows that differ from the clean run and the
rows that are non-finite (at most 12 of each).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
os.environ.setdefault("FLASHQLA_POISON_OUTPUTS", "1")

import flashqla  # noqa: E402
from gdn_inputs import make_problem, ragged_cu_seqlens  # noqa: E402

LENGTHS, TAIL, H = [130, 200, 70], 30, 2
SEQ1 = range(130, 330)  # rows of sequence 1, where the NaN is put: differences there are expected
PAD0 = sum(LENGTHS)  # first padding row
LEAVES = ("q", "k", "v", "g", "beta", "initial_state")


def run(problem, cu, do, dht) -> dict[str, torch.Tensor]:
    """o and the gradients of every input of one forward + backward."""
    leaves = {n: problem[n].detach().clone().requires_grad_() for n in LEAVES}
    o, ht = flashqla.chunk_gated_delta_rule(**leaves, output_final_state=True, cu_seqlens=cu)
    ((o.float() * do).sum() + (ht * dht).sum()).backward()
    return {"o": o.detach(), **{"d" + n: leaves[n].grad for n in LEAVES}}


def rows_where(mask: torch.Tensor) -> list[int]:
    """Token rows (dim 0 after the batch) where mask holds anywhere, outside sequence 1."""
    while mask.dim() > 1:
        mask = mask.any(-1)
    return [r for r in mask.nonzero().flatten().tolist() if r not in SEQ1]


def report(clean: dict, other: dict, tag: str) -> None:
    out = []
    for key in clean:
        if key == "dinitial_state":  # per sequence, not per token
            continue
        x, y = clean[key][0], other[key][0]
        differ = rows_where(~((x == y) | (torch.isnan(x) & torch.isnan(y))))
        nonfinite = rows_where(~torch.isfinite(y.float()))
        if differ or nonfinite:
            more = "..." if len(differ) > 12 else ""
            out.append(f"{key}: diff rows {differ[:12]}{more} nonfinite {nonfinite[:12]}")
    print(tag, "|", "; ".join(out) if out else "clean", flush=True)


def with_nan(problem: dict, name: str, rows) -> dict:
    changed = dict(problem)
    changed[name] = problem[name].clone()
    changed[name][0, rows] = float("nan")
    return changed


def main() -> int:
    torch.manual_seed(0)
    hv = int(os.environ.get("HV", 8))
    problem = make_problem(1, PAD0 + TAIL, H, hv, device="cuda", N=len(LENGTHS))
    cu = ragged_cu_seqlens(LENGTHS, "cuda")
    T = problem["v"].shape[1]
    do = torch.randn(1, T, hv, 128, device="cuda")
    dht = torch.randn(len(LENGTHS), hv, 128, 128, device="cuda") / 8
    clean = run(problem, cu, do, dht)
    report(clean, run(problem, cu, do, dht), "repeat")
    for name in sys.argv[1].split(","):
        for tok in (SEQ1.start, 207, SEQ1.stop - 1):  # sequence 1's first, a middle and its last token
            report(clean, run(with_nan(problem, name, tok), cu, do, dht), f"{name}@{tok}")
    everything = dict(problem)
    for name in ("q", "k", "v", "g", "beta"):
        everything = with_nan(everything, name, slice(PAD0, None))
        report(clean, run(with_nan(problem, name, slice(PAD0, None)), cu, do, dht), f"padding-{name}")
    report(clean, run(everything, cu, do, dht), "padding")
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
