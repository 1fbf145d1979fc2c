#!/usr/bin/env python3
"""The forward's chunk prep per block of a group's v-heads (the default where a qk-head has 2 or more v-heads,
tilelang_src/sm90/chunk_prep_group.py) against the prep per v-head (FLASHQLA_PREP_GROUP=0): forward and
training-step times in one process, alternating the two, and the outputs of the two compared (they differ by the
rounding order of A only: relative L2 difference printed).

    python benchmarks/prep_ab.py --heads 2,8 16,64 --mixes 1x8192 1x32768 8192x4

Timing as bench_gdn.py (CUDA-graph replay, median of --reps; the better of two alternations; the kernel is
chosen when the graph is captured); inputs as there.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch

import flashqla

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_gdn import _training_step, make_inputs, time_ms  # noqa: E402
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


def output_difference(x) -> float:
    """Relative L2 difference of o between the two preps."""
    outs = []
    for grouped in (True, False):
        set_grouped(grouped)
        with torch.no_grad():
            o, _ = call(**{n: x[n] for n in ("q", "k", "v", "g", "beta", "initial_state", "cu_seqlens")})
        outs.append(o.double())
    return ((outs[0] - outs[1]).norm() / outs[1].norm()).item()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--heads", nargs="+", default=["2,8", "16,32", "16,64"])
    ap.add_argument("--mixes", nargs="+", default=["1x8192", "1x32768", "8192x4"])
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, flashqla "
          f"{flashqla.build_manifest().get('source_commit')}; ms, prep per v-head / grouped / ratio")
    print("| (h_qk, h_v) | seqlens | " + " | ".join(f"{m} per v-head | {m} grouped | x" for m in MODES)
          + " | o rel. diff |")
    print("|---|---|" + "---|---|---|" * len(MODES) + "---|")
    for h in args.heads:
        hqk, hv = (int(v) for v in h.split(","))
        for mix in args.mixes:
            x = make_inputs(parse_lengths(mix), hqk, hv)
            diff = output_difference(x)
            ms = {}
            for mode in MODES:
                for grouped in (False, True, False, True):  # alternated: a drift of the clock hits both
                    set_grouped(grouped)
                    fn = forward(x) if mode == "fwd" else _training_step(call, x, mode)
                    t, captured = time_ms(fn, args.calls, args.reps)
                    ms[(mode, grouped)] = min(ms.get((mode, grouped), float("inf")), t)
                    if not captured:
                        print(f"warning: {mode} grouped={grouped} not captured in a CUDA graph")
            os.environ.pop(SWITCH, None)
            cells = []
            for mode in MODES:
                a, b = ms[(mode, False)], ms[(mode, True)]
                cells += [f"{a:.3f}", f"{b:.3f}", f"{a / b:.2f}"]
            print(f"| ({hqk}, {hv}) | {mix} | " + " | ".join(cells) + f" | {diff:.1e} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
