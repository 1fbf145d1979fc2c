"""`python -m flashqla`: run one GDN prefill problem forward and backward on the best backend present,
check the outputs and all six gradients against float64 and print the times. `python -m flashqla --info` describes the installation.

Default problem: the Qwen3.5 / Qwen3-Next GDN layer at TP1 (16 q/k heads, 32 v heads, K = V = 128),
two packed sequences, bf16, with an initial state. On a GPU the installed library has kernels for (see
--info) the compiled kernels run; elsewhere the CPU reference (a smaller problem, since it is float64 Python).
"""

from __future__ import annotations

import argparse
import platform
import sys
import time

import torch


_GPUS = {"sm_90a": "H100/H200", "sm_100a": "B200/GB200", "sm_120a": "RTX 50xx, RTX PRO 6000 Blackwell"}


def _info() -> None:
    import flashqla
    from flashqla._ops import kernel_family, unsupported_gpu_reason

    man = flashqla.build_manifest()
    print(f"flashqla {flashqla.__version__}  ({flashqla._ops.LIBRARY_PATH})")
    print(f"torch {torch.__version__} (CUDA {torch.version.cuda}), python {platform.python_version()}")
    kernels = man.get("kernels", [])
    groups: dict[tuple[str, str, bool], int] = {}
    for k in kernels:
        key = (k["arch"], k.get("family", ""), bool(k.get("check_variant")))
        groups[key] = groups.get(key, 0) + 1
    archs = [a for a in man.get("archs", []) if any(g[0] == a and not g[2] for g in groups)]
    print(f"compiled for: {', '.join(archs) or 'none'}; {len(kernels)} kernel variants; "
          f"TileLang {kernels[0]['tilelang'] if kernels else '?'} at build time; "
          f"source commit {man.get('source_commit') or 'unknown'}")
    for (arch, family, check), count in groups.items():
        what = (f"check variants: run on Hopper with FLASHQLA_KERNEL_FAMILY={family}" if check
                else _GPUS.get(arch, ""))
        print(f"  {arch:8s} {family + ' family':13s} {count:2d} variants  {what}")
    if torch.cuda.is_available():
        cc = torch.cuda.get_device_capability()
        reason = unsupported_gpu_reason()
        state = f"supported, kernel family {kernel_family(cc)}" if reason is None else \
            f"{reason}: CUDA tensors will raise; CPU works"
        print(f"GPU: {torch.cuda.get_device_name()} (sm_{cc[0]}{cc[1]}): {state}")
    else:
        print("GPU: none found; CPU tensors run the float64 reference")


def _rel(x: torch.Tensor, ref: torch.Tensor) -> float:
    return ((x.double() - ref).norm() / ref.norm().clamp_min(1e-300)).item()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m flashqla", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--info", action="store_true", help="print versions, compiled archs and the GPU, then exit")
    ap.add_argument("--tokens", type=int, default=None, help="total tokens (default 4096 on GPU, 512 on CPU)")
    ap.add_argument("--heads", type=int, nargs=2, default=(16, 32), metavar=("H", "HV"))
    ap.add_argument("--cpu", action="store_true", help="use the CPU reference even if a GPU is present")
    args = ap.parse_args(argv)
    import flashqla
    from flashqla.reference import gdn_recurrent_ref, l2norm

    if args.info:
        _info()
        return 0
    from flashqla._ops import kernel_family, unsupported_gpu_reason

    gpu = unsupported_gpu_reason() is None and not args.cpu
    device = "cuda" if gpu else "cpu"
    T = args.tokens or (4096 if gpu else 512)
    H, HV = args.heads
    torch.manual_seed(0)
    cu = torch.tensor([0, T // 3, T], dtype=torch.int32, device=device)
    q = l2norm(torch.randn(1, T, H, 128, device=device)).bfloat16()
    k = l2norm(torch.randn(1, T, H, 128, device=device)).bfloat16()
    v = torch.randn(1, T, HV, 128, device=device).bfloat16()
    g = torch.nn.functional.logsigmoid(torch.randn(1, T, HV, device=device)) / 16
    beta = torch.rand(1, T, HV, device=device).sigmoid()
    h0 = torch.randn(2, HV, 128, 128, device=device) * 0.1

    def run():
        return flashqla.chunk_gated_delta_rule(q, k, v, g, beta, initial_state=h0, output_final_state=True,
                                               cu_seqlens=cu)

    backend = (f"{kernel_family(torch.cuda.get_device_capability())} kernels on {torch.cuda.get_device_name()}"
               if gpu else "CPU float64 reference")
    print(f"flashqla {flashqla.__version__}: GDN forward + backward, T={T} (2 sequences), H={H}, HV={HV}, "
          f"K=V=128, bf16, backend: {backend}")
    names = ("q", "k", "v", "g", "beta", "initial_state")
    inputs = dict(q=q, k=k, v=v, g=g, beta=beta, initial_state=h0)
    do = torch.randn(1, T, HV, 128, device=device)
    dht = torch.randn(2, HV, 128, 128, device=device) / 8

    def step():
        leaves = {n: inputs[n].detach().clone().requires_grad_() for n in names}
        o, ht = flashqla.chunk_gated_delta_rule(**leaves, output_final_state=True, cu_seqlens=cu)
        ((o.float() * do).sum() + (ht * dht).sum()).backward()
        return o, ht, {n: leaves[n].grad for n in names}

    t0 = time.perf_counter()
    o, ht, grads = step()
    if gpu:
        torch.cuda.synchronize()
    first = (time.perf_counter() - t0) * 1e3
    fwd_ms, step_ms = _time(run, gpu), _time(step, gpu)

    o_ref, ht_ref = gdn_recurrent_ref(q, k, v, g, beta, initial_state=h0, output_final_state=True, cu_seqlens=cu)
    if gpu:  # the written-out float64 chunked backward (checked against autograd in tests/test_reference.py)
        from flashqla.reference import chunk_bwd_ref, chunk_local_cumsum_ref

        ref = chunk_bwd_ref(q, k, v, chunk_local_cumsum_ref(g, cu), beta, do, dht, 128 ** -0.5, h0, cu)
        ref_grads = dict(zip(names, ref))
    else:  # the CPU op path is that chunked backward: check it against autograd of the recurrence
        leaves = {n: inputs[n].detach().double().requires_grad_() for n in names}
        o64, ht64 = gdn_recurrent_ref(**leaves, output_final_state=True, cu_seqlens=cu)
        ((o64 * do.double()).sum() + (ht64 * dht.double()).sum()).backward()
        ref_grads = {n: leaves[n].grad for n in names}
    errors = {"o": _rel(o, o_ref), "final_state": _rel(ht, ht_ref)}
    errors.update({f"d{n}" if n != "initial_state" else "dh0": _rel(grads[n], ref_grads[n]) for n in names})
    ok = all(e < 2e-2 for e in errors.values())
    print(f"first call (forward + backward) {first:.1f} ms; forward {fwd_ms:.3f} ms; forward + backward {step_ms:.3f} ms")
    print("relative L2 error vs float64: " + ", ".join(f"{n} {e:.1e}" for n, e in errors.items()))
    print("OK" if ok else "FAIL: an error is above 2e-2")
    return 0 if ok else 1


def _time(fn, gpu: bool) -> float:
    """Milliseconds per call: CUDA events over 20 calls after a warm-up on the GPU, one call on CPU."""
    if not gpu:
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3
    fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(20):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 20


if __name__ == "__main__":
    sys.exit(main())
