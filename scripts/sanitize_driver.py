#!/usr/bin/env python3
"""The workload scripts/sanitize.sh runs under compute-sanitizer: every compiled kernel once on small shapes.

For bf16 and fp16 (the chunk prep, forward, state-gradient and chunk-gradient kernels of each), one
forward + backward through flashqla.chunk_gated_delta_rule with packed sequences (a 1-token, an empty, a
partial-chunk and a multi-chunk one), a padding tail, an initial state and the final state, in both
state layouts, at two v-heads per qk-head (the chunk gradient's gmax 2 variant where the build has one), in bf16 at
four (its default variant) and in fp16 at one (its gmax 1 variant); the same with context parallelism forced on (the
segment-plan and correction kernels); once with the chunk states kept (the forward stores o and the states in one
launch); then the ops with malformed cu_seqlens (unsorted, negative, beyond T), which the kernels clamp on the device:
under memcheck they must not access memory out of bounds either.

    PYTHONPATH=/tmp/site python scripts/sanitize_driver.py
"""

from __future__ import annotations

import sys

import torch


def problem(dtype, lengths, tail, H=2, HV=4, dev="cuda"):
    from flashqla.reference import l2norm

    T = sum(lengths) + tail
    return dict(q=l2norm(torch.randn(1, T, H, 128, device=dev)).to(dtype),
                k=l2norm(torch.randn(1, T, H, 128, device=dev)).to(dtype),
                v=torch.randn(1, T, HV, 128, device=dev).to(dtype),
                g=torch.nn.functional.logsigmoid(torch.randn(1, T, HV, device=dev)) / 8,
                beta=torch.rand(1, T, HV, device=dev),
                initial_state=torch.randn(len(lengths), HV, 128, 128, device=dev) / 4)


def offsets(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.int32, device="cuda")


def main() -> int:
    import flashqla

    torch.manual_seed(0)
    lengths, tail = [1, 0, 100, 130], 21
    cu = offsets([0, 1, 1, 101, 231])
    for dtype, v_first, H in ((torch.bfloat16, False, 2), (torch.float16, True, 2), (torch.bfloat16, False, 1),
                              (torch.float16, False, 4)):
        p = {n: t.requires_grad_() for n, t in problem(dtype, lengths, tail, H=H).items()}
        o, ht = flashqla.chunk_gated_delta_rule(**p, output_final_state=True, cu_seqlens=cu, state_v_first=v_first)
        (o.float().square().sum() + ht.square().sum()).backward()
        torch.cuda.synchronize()
        bad = [n for n, t in p.items() if not bool(torch.isfinite(t.grad).all())]
        assert bool(torch.isfinite(o).all()) and not bad, f"{dtype}: non-finite results {bad}"
        print(f"sanitize driver: {dtype} forward + backward (varlen, padding, h0, final state, "
              f"state_v_first={v_first}, {4 // H} v-heads per qk-head) done", flush=True)

    # context parallelism forced on (segments of 1 chunk): the segment plan, the warm-up pass with its
    # transition-matrix CTAs (g = 0 heads), the correction and the main pass; also in the backward's recompute
    p = problem(torch.bfloat16, lengths, tail)
    p["g"][..., :2] = 0  # heads without decay take the exact fallback
    fwd = flashqla.chunk_gated_delta_rule_fwd(p["q"], p["k"], p["v"], p["g"], p["beta"],
                                              initial_state=p["initial_state"], output_final_state=True,
                                              cu_seqlens=cu, cp_segment_chunks=1)
    flashqla.chunk_gated_delta_rule_bwd(p["q"], p["k"], p["v"], fwd.g_cumsum, p["beta"], fwd.A, torch.randn_like(fwd.o),
                                        None, initial_state=p["initial_state"], cu_seqlens=cu, cp_segment_chunks=1)
    torch.cuda.synchronize()
    assert bool(torch.isfinite(fwd.o).all()), "context parallelism: non-finite outputs"
    print("sanitize driver: context parallelism (forward and backward recompute) done", flush=True)

    # the forward storing o and the chunk states in one launch (save_chunk_states), the backward reading them
    p = {n: t.requires_grad_() for n, t in problem(torch.bfloat16, lengths, tail).items()}
    o, ht = flashqla.chunk_gated_delta_rule(**p, output_final_state=True, cu_seqlens=cu, save_chunk_states=True)
    (o.float().square().sum() + ht.square().sum()).backward()
    torch.cuda.synchronize()
    assert all(bool(torch.isfinite(t.grad).all()) for t in p.values()), "chunk states kept: non-finite gradients"
    print("sanitize driver: forward + backward with the chunk states kept done", flush=True)

    # malformed offsets: clamped on the device, never an out-of-bounds access (results unspecified)
    p = problem(torch.bfloat16, [100, 100], 31)
    T = 231
    for values in ([0, 150, 40, T], [-7, 60, T], [0, 90, 10**6], [50, 10, 2**31 - 1]):
        cu_bad = offsets(values)
        h0 = torch.zeros(len(values) - 1, 4, 128, 128, device="cuda")
        o, ht, gc, A, _ = torch.ops.flashqla.gdn_fwd(p["q"], p["k"], p["v"], p["g"], p["beta"], 0.088, h0, cu_bad,
                                                     True, False)
        torch.ops.flashqla.gdn_bwd(p["q"], p["k"], p["v"], gc, p["beta"], A, torch.randn_like(o), torch.randn_like(ht),
                                   0.088, h0, cu_bad, False)
    torch.cuda.synchronize()
    print("sanitize driver: malformed cu_seqlens (forward and backward ops) done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
