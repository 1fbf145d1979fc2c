#!/usr/bin/env python3
"""The backward alone, kernel by kernel, for flashqla and its peers side by side (torch.profiler): where
flashqla's backward loses or wins against FlashQLA's at one shape, not only by how much.

    python benchmarks/profile_bwd_peers.py --heads 4,8 --mixes 1x8192 4096+4096 --libs flashqla,flash_qla

Per library and shape: the backward's time (bench_gdn.time_ms, CUDA graph), the sum of its kernels' GPU
times (above the time where kernels overlap on streams) and its largest kernels; with --timeline one call's
kernels in order, with their start, duration and stream.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_gdn import LIBRARIES, capture_graph, make_inputs, time_ms, warm_up  # noqa: E402
from profile_kernels import kernel_table  # noqa: E402
from shapes import parse_lengths  # noqa: E402


def timeline(fn, graph: bool = False) -> list[tuple[float, float, int, str]]:
    """One call's kernels in launch order: (start us after the first kernel's start, duration us, stream, name),
    from torch.profiler's trace; shows which chain of kernels sets the time where streams overlap. graph: the call
    captured in a CUDA graph (as bench_gdn.py times it) and one replay traced, so that the gaps between kernels are
    the GPU's own, without the host's launch times of an eager call."""
    warm_up(fn)
    run = capture_graph(fn, 1).replay if graph else fn
    run()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        run()
        torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        prof.export_chrome_trace(f.name)
        events = json.load(open(f.name))["traceEvents"]
    kernels = sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    t0 = kernels[0]["ts"] if kernels else 0.0
    return [(e["ts"] - t0, e["dur"], e.get("args", {}).get("stream", -1), e["name"]) for e in kernels]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--heads", nargs="+", default=["4,8"])
    ap.add_argument("--mixes", nargs="+", default=["1x8192"])
    ap.add_argument("--libs", default="flashqla,flash_qla")
    ap.add_argument("--top", type=int, default=10, help="kernels listed per library and shape")
    ap.add_argument("--timeline", action="store_true", help="also one call's kernels in launch order")
    ap.add_argument("--graph", action="store_true", help="the timeline of a CUDA-graph replay of the call")
    args = ap.parse_args()
    libs = {name: LIBRARIES[name]() for name in args.libs.split(",")}
    for h in args.heads:
        hqk, hv = (int(x) for x in h.split(","))
        for mix in args.mixes:
            x = make_inputs(parse_lengths(mix), hqk, hv)
            for name, (_, make) in libs.items():
                fn = make(x, "bwd")
                ms, _ = time_ms(fn, calls=10, reps=3)
                rows = kernel_table(fn)
                total = sum(t for _, t in rows)
                print(f"\n== ({hqk}, {hv}) {mix} {name}: backward {ms:.3f} ms; kernels {total:.3f} ms in "
                      f"{len(rows)} kinds")
                for kname, t in rows[: args.top]:
                    print(f"  {t:8.3f}  {kname[:110]}")
                if args.timeline:
                    print(f"  timeline{' of a graph replay' if args.graph else ''} (start us, duration us, stream, kernel):")
                    for start, dur, stream, kname in timeline(fn, args.graph):
                        print(f"    {start:8.1f} {dur:7.1f} {stream:4d}  {kname[:90]}")
                del fn
                torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
