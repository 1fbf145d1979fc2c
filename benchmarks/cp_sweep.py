#!/usr/bin/env python3
"""Forward and backward time of flashqla for forced segment lengths (intra-card context parallelism) and forced V-slice
widths of the forward, to calibrate the host's segment model (csrc/ops/segment_plan.cpp) against what the GPU does.

    python benchmarks/cp_sweep.py --heads 16,32 2,8 --mixes 1x32768 --cp -1 0 32 64 128 256

-1 is the automatic choice, 0 one segment per sequence, L > 0 segments of L chunks (lengths of at least a sequence's
chunks are skipped). For each: the forward at the model's V width, at each of `--widths` (default 64 and 128;
FLASHQLA_FWD_BLOCK_V; 128 where the build has a 128-wide kernel), and the backward alone (after one untimed forward)
at the model's widths. Inputs as in bench_gdn.py (a quarter of the heads without decay: the exact fallback). Times as
bench_gdn.py's: median ms per call over replays of a CUDA graph of `--calls` calls (host launch overhead out of the
way, as in a captured training step).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch

import flashqla

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_gdn import make_inputs, time_ms  # noqa: E402
from shapes import parse_lengths  # noqa: E402

WIDTH_ENV = "FLASHQLA_FWD_BLOCK_V"


def with_width(width: str, fn):
    """fn() with the forward's V width forced ("32", "64", "128") or left to the model ("")."""
    before = os.environ.get(WIDTH_ENV)
    os.environ[WIDTH_ENV] = width
    try:
        return fn()
    finally:
        if before is None:
            del os.environ[WIDTH_ENV]
        else:
            os.environ[WIDTH_ENV] = before


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--heads", nargs="+", default=["16,32", "2,8"])
    ap.add_argument("--mixes", nargs="+", default=["1x32768"])
    ap.add_argument("--cp", nargs="+", type=int, default=[-1, 0, 32, 64, 128, 256])
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--widths", nargs="+", default=["64", "128"], choices=["32", "64", "128"],
                    help="the forced V widths of the forward timed beside the model's choice")
    ap.add_argument("--no-wide", action="store_true", help="no forward at a forced 128-wide V slice")
    ap.add_argument("--hint", action="store_true",
                    help="pass cu_seqlens_cpu (the ops then plan from the longest sequence: max_seqlen)")
    ap.add_argument("--keep", action="store_true",
                    help="the forward keeps the chunk states and the backward reads them (save_chunk_states): its "
                         "state-gradient pass runs without the recompute beside it")
    args = ap.parse_args()
    widths = [w for w in args.widths if not (args.no_wide and w == "128")]
    print(f"{'shape':>22} {'cp':>5} {'fwd ms':>8} " + " ".join(f"{'fwd' + w:>8}" for w in widths) + f" {'bwd ms':>8}")
    for heads in args.heads:
        hqk, hv = (int(x) for x in heads.split(","))
        for mix in args.mixes:
            lengths = parse_lengths(mix)
            x = make_inputs(lengths, hqk, hv)
            q, k, v, g, beta, h0, cu = (x[n] for n in ("q", "k", "v", "g", "beta", "initial_state", "cu_seqlens"))
            do = torch.randn_like(v)
            cpu = cu.cpu() if args.hint else None
            longest = max(-(-n // 64) for n in lengths)
            for cp in args.cp:
                if cp >= longest:
                    continue

                def fwd(cp=cp):
                    return flashqla.chunk_gated_delta_rule_fwd(q, k, v, g, beta, initial_state=h0, cu_seqlens=cu,
                                                               cu_seqlens_cpu=cpu, cp_segment_chunks=cp,
                                                               output_chunk_states=args.keep)
                out = with_width("", fwd)

                def bwd(cp=cp, out=out):
                    return flashqla.chunk_gated_delta_rule_bwd(q, k, v, out.g_cumsum, beta, out.A, do, out.final_state,
                                                               initial_state=h0, cu_seqlens=cu, cu_seqlens_cpu=cpu,
                                                               cp_segment_chunks=cp, chunk_states=out.chunk_states)
                t_f = with_width("", lambda: time_ms(fwd, args.calls, args.reps)[0])
                t_w = [with_width(w, lambda: time_ms(fwd, args.calls, args.reps)[0]) for w in widths]
                t_b = with_width("", lambda: time_ms(bwd, args.calls, args.reps)[0])
                print(f"{f'({hqk},{hv}) {mix}':>22} {cp:>5} {t_f:8.3f} " + " ".join(f"{t:8.3f}" for t in t_w)
                      + f" {t_b:8.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
