#!/usr/bin/env python3
"""The backward's side stream (docs/ops.md, "Streams": the state recompute beside the state gradient) against
every launch on one stream (FLASHQLA_SINGLE_STREAM=1, the order before): training-step and backward-only times
in one process, alternating the two modes, and the outputs and gradients of the two modes compared bit for bit.

    python benchmarks/streams_ab.py --heads 2,8 16,32 --mixes 1x8192 1x32768 8192x4

Timing as bench_gdn.py (CUDA-graph replay, median of --reps; the better of two alternations); inputs as there.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch

import flashqla

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ab_timing import ab_args, ab_cells, print_header  # noqa: E402
from bench_gdn import _training_step, make_inputs  # noqa: E402
from shapes import parse_lengths  # noqa: E402

SINGLE = "FLASHQLA_SINGLE_STREAM"
MODES = ("fwdbwd", "bwd")


def set_single(single: bool) -> None:
    if single:
        os.environ[SINGLE] = "1"
    else:
        os.environ.pop(SINGLE, None)


def call(**t):
    return flashqla.chunk_gated_delta_rule(**t, output_final_state=True)


def results(x, single: bool) -> list[torch.Tensor]:
    """o, the final state and the six inputs' gradients of one step, for fixed upstream gradients."""
    set_single(single)
    names = ("q", "k", "v", "g", "beta", "initial_state")
    leaves = {n: x[n].detach().clone().requires_grad_() for n in names}
    gen = torch.Generator(device="cuda").manual_seed(1)
    do = torch.randn(x["v"].shape, device="cuda", generator=gen).to(x["v"].dtype)
    dht = torch.randn(x["initial_state"].shape, device="cuda", generator=gen) / 8
    o, ht = call(**leaves, cu_seqlens=x["cu_seqlens"])
    torch.autograd.backward([o, ht], [do, dht])
    return [o.detach().clone(), ht.detach().clone()] + [leaves[n].grad.clone() for n in names]


def runner(x, mode):
    return _training_step(call, x, mode)


def main() -> int:
    args = ab_args(__doc__, ["2,8", "16,32"], ["1x8192", "1x32768"])
    print_header(MODES, ("one stream", "one"), ("side streams", "side"), "results")
    bad = 0
    for h in args.heads:
        hqk, hv = (int(v) for v in h.split(","))
        for mix in args.mixes:
            x = make_inputs(parse_lengths(mix), hqk, hv)
            same = all(torch.equal(a, b) for a, b in zip(results(x, True), results(x, False)))
            bad += not same
            cells = ab_cells(MODES, lambda mode: runner(x, mode), lambda side: set_single(not side), args.calls,
                             args.reps, labels=("single=True", "single=False"))
            set_single(False)
            print(f"| ({hqk}, {hv}) | {mix} | " + " | ".join(cells) + f" | {'bitwise equal' if same else 'DIFFER'} |",
                  flush=True)
    if bad:
        print(f"streams_ab: outputs or gradients differ between the modes in {bad} shapes")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
