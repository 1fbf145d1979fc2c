#!/usr/bin/env python3
"""Per-kernel GPU time of one flashqla forward and one training step (torch.profiler), to see where
the time goes; and the cold start: import plus the first call in this fresh process.

    python benchmarks/profile_kernels.py --heads 16,64 --mixes 1x32768 1x8192
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

t_start = time.perf_counter()
import torch  # noqa: E402

import flashqla  # noqa: E402

t_import = time.perf_counter() - t_start
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_gdn import make_inputs  # noqa: E402
from shapes import parse_lengths  # noqa: E402


def kernel_table(fn, iters: int = 5) -> list[tuple[str, float]]:
    fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    rows = {}
    for e in prof.key_averages():
        if e.device_type == torch.autograd.DeviceType.CUDA and e.self_device_time_total > 0:
            rows[e.key] = rows.get(e.key, 0.0) + e.self_device_time_total / iters / 1e3
    return sorted(rows.items(), key=lambda kv: -kv[1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--heads", nargs="+", default=["16,64"])
    ap.add_argument("--mixes", nargs="+", default=["1x32768"])
    args = ap.parse_args()
    first_input = make_inputs([4096], 16, 32)
    t0 = time.perf_counter()
    flashqla.chunk_gated_delta_rule(**first_input, output_final_state=True)
    torch.cuda.synchronize()
    print(f"cold start: import torch + flashqla {t_import:.2f} s; first forward call {time.perf_counter() - t0:.3f} s "
          f"(no JIT: kernels are compiled into the wheel)")
    for h in args.heads:
        hqk, hv = (int(x) for x in h.split(","))
        for mix in args.mixes:
            x = make_inputs(parse_lengths(mix), hqk, hv)
            cpu = x["cu_seqlens"].cpu()  # the host copy, as bench_gdn.py passes it (the segment plans' max_seqlen)
            names = ("q", "k", "v", "g", "beta", "initial_state")
            leaves = {n: x[n].detach().clone().requires_grad_() for n in names}
            do, dht = torch.randn_like(x["v"]), torch.randn_like(x["initial_state"])

            def step(keep=False):
                for t in leaves.values():
                    t.grad = None  # else the profile shows autograd's accumulation into .grad (bf16 adds)
                o, ht = flashqla.chunk_gated_delta_rule(**leaves, output_final_state=True, cu_seqlens=x["cu_seqlens"],
                                                        cu_seqlens_cpu=cpu, save_chunk_states=keep)
                torch.autograd.backward([o, ht], [do, dht])

            for label, fn in (("forward", lambda: flashqla.chunk_gated_delta_rule(**x, output_final_state=True,
                                                                                   cu_seqlens_cpu=cpu)),
                              ("training step", step),
                              ("training step, chunk states kept", lambda: step(keep=True))):
                table = kernel_table(fn)
                total = sum(ms for _, ms in table)
                print(f"({hqk},{hv}) {mix} {label}: {total:.3f} ms of kernels")
                for name, ms in table[:12]:
                    print(f"    {ms:8.3f} ms  {name[:90]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
