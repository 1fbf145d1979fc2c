#!/usr/bin/env python3
"""Runs many forward + backward steps of chunk_gated_delta_rule on the GPU and checks that nothing
accumulates: torch.cuda.memory_allocated after every step equals its value after the warm-up, and the
caching allocator reserves nothing more. Prints a summary line; exits 1 on growth.

    PYTHONPATH=/tmp/site python scripts/memory_flatness.py [--steps 10000] [--tokens 4096] [--heads 16 32]

The steps alternate the code paths that allocate differently (varlen with padding, dense batch,
use_qk_l2norm_in_kernel, state_v_first, no initial state). tests/test_memory_gpu.py runs a shorter version.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time

import torch


def make_steps(T: int, H: int, HV: int):
    import flashqla
    from flashqla.reference import l2norm

    dev = "cuda"

    def problem(B, t, N):
        q = l2norm(torch.randn(B, t, H, 128, device=dev)).bfloat16()
        k = l2norm(torch.randn(B, t, H, 128, device=dev)).bfloat16()
        return dict(q=q, k=k, v=torch.randn(B, t, HV, 128, device=dev).bfloat16(),
                    g=torch.nn.functional.logsigmoid(torch.randn(B, t, HV, device=dev)) / 16,
                    beta=torch.rand(B, t, HV, device=dev), initial_state=torch.randn(N, HV, 128, 128, device=dev))

    lengths = [T // 2, 1, 0, T // 2 - 70]
    cu = torch.tensor(list(itertools.accumulate(lengths, initial=0)), dtype=torch.int32, device=dev)
    varlen, dense = problem(1, T, len(lengths)), problem(2, T // 2, 2)
    variants = [
        (varlen, dict(cu_seqlens=cu)),
        (dense, dict()),
        (varlen, dict(cu_seqlens=cu, use_qk_l2norm_in_kernel=True)),
        (dense, dict(state_v_first=True)),
        ({**varlen, "initial_state": None}, dict(cu_seqlens=cu)),
    ]

    def step(i: int) -> None:
        p, kw = variants[i % len(variants)]
        leaves = {n: t.detach().clone().requires_grad_() for n, t in p.items() if t is not None}
        o, ht = flashqla.chunk_gated_delta_rule(**leaves, output_final_state=True, **kw)
        (o.float().square().mean() + ht.square().mean()).backward()

    return step, len(variants)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--heads", type=int, nargs=2, default=(16, 32), metavar=("H", "HV"))
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("memory_flatness: no CUDA GPU")
        return 2
    step, period = make_steps(args.tokens, *args.heads)
    for i in range(2 * period):  # warm-up: every variant twice
        step(i)
    torch.cuda.synchronize()
    allocated, reserved = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
    worst, grew_at = 0, None
    t0 = time.time()
    for i in range(args.steps):
        step(i)
        delta = torch.cuda.memory_allocated() - allocated
        if delta != 0 and grew_at is None:
            grew_at = i
        worst = max(worst, delta)
    torch.cuda.synchronize()
    reserved_delta = torch.cuda.memory_reserved() - reserved
    ok = grew_at is None and reserved_delta == 0
    print(f"memory_flatness: {args.steps} forward+backward steps (T={args.tokens}, H, HV = {tuple(args.heads)}) in "
          f"{time.time() - t0:.1f} s; memory_allocated {allocated} B after warm-up, largest change "
          f"{worst} B{'' if grew_at is None else f' (first at step {grew_at})'}; memory_reserved change "
          f"{reserved_delta} B; peak allocated {torch.cuda.max_memory_allocated()} B: {'FLAT' if ok else 'GREW'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
