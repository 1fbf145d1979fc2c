#!/usr/bin/env python3
"""The forward's chunk prep with several v-heads per CTA (the default where a qk-head has 2 or more v-heads,
tilelang_src/sm90/chunk_prep.py) against one v-head per CTA (FLASHQLA_PREP_GROUP=0): forward and training-step
times in one process, alternating the two, and the forward's outputs of the two compared bit for bit.

    python benchmarks/prep_ab.py --heads 2,8 16,64 --mixes 1x8192 1x32768 8192x4

Timing as bench_gdn.py (CUDA-graph replay, median of --reps; the better of two alternations; the kernel is
chosen when the graph is captured); inputs as there.
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

SWITCH = "FLASHQLA_PREP_GROUP"
MODES = ("fwd", "fwdbwd")


def set_grouped(grouped: bool) -> None:
    os.environ[SWITCH] = "1" if grouped else "0"


def call(**t):
    return flashqla.chunk_gated_delta_rule(**t, output_final_state=True)


def forward(x):
    def run():
        with torch.no_grad():
            call(**{n: x[n] for n in ("q", "k", "v", "g", "beta", "initial_state", "cu_seqlens")})
    return run


def same_outputs(x) -> bool:
    """o and the final state bitwise equal with and without several v-heads per CTA."""
    outs = []
    for grouped in (True, False):
        set_grouped(grouped)
        with torch.no_grad():
            outs.append(call(**{n: x[n] for n in ("q", "k", "v", "g", "beta", "initial_state", "cu_seqlens")}))
    return all(torch.equal(a, b) for a, b in zip(*outs))


def main() -> int:
    args = ab_args(__doc__, ["2,8", "16,32", "16,64"], ["1x8192", "1x32768", "8192x4"])
    print_header(MODES, ("one v-head per CTA", "one"), ("grouped", "grouped"), "outputs")
    bad = 0
    for h in args.heads:
        hqk, hv = (int(v) for v in h.split(","))
        for mix in args.mixes:
            x = make_inputs(parse_lengths(mix), hqk, hv)
            same = same_outputs(x)
            bad += not same
            cells = ab_cells(MODES, lambda mode: forward(x) if mode == "fwd" else _training_step(call, x, mode),
                             set_grouped, args.calls, args.reps, labels=("grouped=False", "grouped=True"))
            os.environ.pop(SWITCH, None)
            print(f"| ({hqk}, {hv}) | {mix} | " + " | ".join(cells) + f" | {'bitwise equal' if same else 'DIFFER'} |",
                  flush=True)
    if bad:
        print(f"prep_ab: outputs differ between the two in {bad} shapes")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
