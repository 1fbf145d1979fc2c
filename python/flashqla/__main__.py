"""`python -m flashqla`: run one GDN prefill problem on the best backend present, check it against
the float64 recurrence and print the time. `python -m flashqla --info` describes the installation.

Default problem: the Qwen3.5 / Qwen3-Next GDN layer at TP1 (16 q/k heads, 32 v heads, K = V = 128),
two packed sequences, bf16, with an initial state. On an SM90 GPU the compiled kernels run; elsewhere
the CPU reference (a smaller problem, since it is float64 Python).
"""

from __future__ import annotations

import argparse
import platform
import sys
import time

import torch


def _info() -> None:
    import flashqla

    man = flashqla.build_manifest()
    print(f"flashqla {flashqla.__version__}  ({flashqla._ops.LIBRARY_PATH})")
    print(f"torch {torch.__version__} (CUDA {torch.version.cuda}), python {platform.python_version()}")
    kernels = man.get("kernels", [])
    print(f"compiled for: {', '.join(man.get('archs', [])) or 'none'}; {len(kernels)} kernel variants; "
          f"TileLang {kernels[0]['tilelang'] if kernels else '?'} at build time")
    if torch.cuda.is_available():
        cc = torch.cuda.get_device_capability()
        ok = f"sm_{cc[0]}{cc[1]}a" in man.get("archs", []) or f"sm_{cc[0]}{cc[1]}" in man.get("archs", [])
        print(f"GPU: {torch.cuda.get_device_name()} (sm_{cc[0]}{cc[1]}): "
              f"{'supported' if ok else 'no kernels compiled for it: CUDA tensors will raise; CPU works'}")
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
    cc = torch.cuda.get_device_capability() if torch.cuda.is_available() else None
    gpu = cc is not None and cc[0] == 9 and not args.cpu
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

    backend = f"SM90 kernels on {torch.cuda.get_device_name()}" if gpu else "CPU float64 reference"
    print(f"flashqla {flashqla.__version__}: GDN forward, T={T} (2 sequences), H={H}, HV={HV}, K=V=128, bf16, "
          f"backend: {backend}")
    t0 = time.perf_counter()
    o, ht = run()
    if gpu:
        torch.cuda.synchronize()
    first = time.perf_counter() - t0
    reps = 20 if gpu else 1
    if gpu:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            run()
        end.record()
        torch.cuda.synchronize()
        ms = start.elapsed_time(end) / reps
    else:
        ms = first * 1e3
    o_ref, ht_ref = gdn_recurrent_ref(q, k, v, g, beta, initial_state=h0, output_final_state=True, cu_seqlens=cu)
    err_o, err_h = _rel(o, o_ref), _rel(ht, ht_ref)
    ok = err_o < 1e-2 and err_h < 1e-2
    print(f"first call {first * 1e3:.1f} ms; forward {ms:.3f} ms")
    print(f"vs float64 recurrence: rel L2 error o {err_o:.2e}, final state {err_h:.2e} -> {'OK' if ok else 'FAIL'}")
    print("backward: not available yet in this version (forward only)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
