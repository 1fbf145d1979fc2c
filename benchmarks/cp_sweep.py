#!/usr/bin/env python3
"""Forward and backward time of flashqla for forced segment lengths (intra-card context parallelism),
to calibrate the host's segment model (csrc/ops/segment_plan.cpp) against what the H200 does.

    python benchmarks/cp_sweep.py --heads 16,32 2,8 --mixes 1x32768 --cp -1 0 32 64 128 256

-1 is the automatic choice, 0 one segment per sequence, L > 0 segments of L chunks. Inputs as in
bench_gdn.py (a quarter of the heads without decay: the exact fallback). Times: CUDA events around
`--calls` calls, median of `--reps`; the backward alone after one untimed forward.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch

import flashqla

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_gdn import make_inputs  # noqa: E402
from shapes import parse_lengths  # noqa: E402


def median_ms(fn, calls: int, reps: int) -> float:
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / calls)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--heads", nargs="+", default=["16,32", "2,8"])
    ap.add_argument("--mixes", nargs="+", default=["1x32768"])
    ap.add_argument("--cp", nargs="+", type=int, default=[-1, 0, 32, 64, 128, 256])
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    print(f"{'shape':>22} {'cp':>5} {'fwd ms':>8} {'bwd ms':>8}")
    for heads in args.heads:
        hqk, hv = (int(x) for x in heads.split(","))
        for mix in args.mixes:
            x = make_inputs(parse_lengths(mix), hqk, hv)
            q, k, v, g, beta, h0, cu = (x[n] for n in ("q", "k", "v", "g", "beta", "initial_state", "cu_seqlens"))
            do = torch.randn_like(v)
            for cp in args.cp:
                def fwd():
                    return flashqla.chunk_gated_delta_rule_fwd(q, k, v, g, beta, initial_state=h0, cu_seqlens=cu,
                                                               cp_segment_chunks=cp)
                out = fwd()

                def bwd():
                    return flashqla.chunk_gated_delta_rule_bwd(q, k, v, out.g_cumsum, beta, out.A, do, out.final_state,
                                                               initial_state=h0, cu_seqlens=cu, cp_segment_chunks=cp)
                t_f = median_ms(fwd, args.calls, args.reps)
                t_b = median_ms(bwd, args.calls, args.reps)
                print(f"{f'({hqk},{hv}) {mix}':>22} {cp:>5} {t_f:8.3f} {t_b:8.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
