"""The forward without the chunk prep (tilelang_src/sm90/gdn_fwd_noprep.py), JIT-compiled from this tree, against the
float64 reference and, for time, against the op of the installed wheel (prep + forward) on the same inputs.

    PYTHONPATH=<site with tilelang and flashqla> python benchmarks/noprep_check.py [--time 32,32:8192x4 ...]

Correctness: ragged batches (partial chunks, a one-token sequence, a padding tail), initial and final states, both
widths; o and the final state against python/flashqla/reference.py's token recurrence in float64 (outputs poisoned
with NaN before the run); each kernel after the first is compared with the first one's outputs bit for bit. Time: the kernel alone (its segment table made once) against
flashqla.chunk_gated_delta_rule_fwd (no chunk states, no final state) per shape, CUDA events, median of 20.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import sys
import tempfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import ablate  # noqa: E402  (the JIT build from this tree)

K = 128
BT = 64
# fwdnp128: the shipped row (P formed by the math warpgroups: p_in_math)
ablate.SPECS["fwdnp128"] = dict(file=ablate.SRC / "sm90" / "gdn_fwd_noprep.py", factory="gdn_fwd_noprep_sm90",
                                params=dict(BV=128, p_in_math=True), fix=[], last_param="", ablations={},
                                inputs=None, combos=[], unit="us/chunk", variants=["cur"])
# where the period goes: ablate.py's guarded blocks (a set bit skips the piece; the results are wrong then, only the
# time counts): the auxiliary warpgroup's pieces (all six: the math warpgroups' chain alone)
NOPREP_ABLATIONS = {
    1: ("aux: gates", "                    if not beta_ring and ax < BT:\n                        beta_s",
        "                    # beta_s is read"),
    2: ("aux: K K^T", "                    if m_ahead:\n                        # the next chunk's, T.min",
        "                    if not p_in_math:\n                        T.barrier_wait(full_qz"),
    # the solve in three pieces (4 + 64 + 128 is the whole solve, bit 4 before the forty-ninth session)
    4: ("aux: solve's zeros and 8x8 blocks", "                    # A_g into inv_s",
        "                    mma_level1_merge(m_s"),
    64: ("aux: solve's level-1 merge", "                    mma_level1_merge(m_s",
         "                    if l2_shfl:\n                        mma_level2_merge("),
    128: ("aux: solve's level-2 merge", "                    if l2_shfl:\n                        mma_level2_merge(",
          "                    if not g_direct:\n                        # G = A_g"),
    8: ("aux: G", "                    # G = A_g", "                    T.fence_proxy_async()\n"
        "                    T.barrier_arrive(x_ready"),
    # (M's gating and store as the shipped row has them: m_ahead off)
    16: ("aux: M's gating", "                        gate_m(kk_frag, g_s, i % KS)\n",
         "                        T.copy(kk_frag, m_s[:, 0:BT])\n                    # A_g into"),
    256: ("aux: M to shared memory", "                        T.copy(kk_frag, m_s[:, 0:BT])\n                    # A_g into",
          "                    # A_g into inv_s"),
    32: ("aux: Q K^T", "                    if not p_in_math:\n                        T.barrier_wait(full_qz",
         "                    # beta for the solve"),
}
ablate.SPECS["fwdnp128"].update(ablations=NOPREP_ABLATIONS, variants=["cur", "ablate"],
                                last_param="        group: T.int32,  # HV / H, from the launcher: head indices are "
                                           "products, never divisions\n")
ablate.SPECS["fwdnp64"] = dict(ablate.SPECS["fwdnp128"], params=dict(BV=64, regs=(208, 152, 144), p_in_math=True),
                               variants=["cur"])
# P formed by the auxiliary warpgroup (fwdnp128a); the shipped row with a three-stage ring of K, g's cumsum and beta
# (k_stages)
ablate.SPECS["fwdnp128a"] = dict(ablate.SPECS["fwdnp128"], params=dict(BV=128), variants=["cur"])
ablate.SPECS["fwdnp128k3"] = dict(ablate.SPECS["fwdnp128"], params=dict(BV=128, p_in_math=True, k_stages=3),
                                  variants=["cur"])
# and the auxiliary stage freed as soon as the math warpgroups read it (x_free_early)
ablate.SPECS["fwdnp128k3x"] = dict(ablate.SPECS["fwdnp128"],
                                   params=dict(BV=128, p_in_math=True, k_stages=3, x_free_early=True), variants=["cur"])
# the shipped row (fwdnp128k3x) with P split between the math warpgroups (p), the gates in log2 units (l), both (pl),
# the solve's shuffles in its 8x8 step and level-1 merge (s), also in its level-2 merge (s2), p, l and s (pls), all
# (pls2), pls with the solves' identity from shared memory (plse), without M's mask (plsm), and pls2 without M's and
# G's masks (pls2mg)
for tag, extra in (("p", dict(p_split=True)), ("l", dict(log2_gates=True)), ("pl", dict(p_split=True, log2_gates=True)),
                   ("s", dict(solve_shfl=True)), ("s2", dict(solve_shfl=True, l2_shfl=True)),
                   ("pls", dict(p_split=True, log2_gates=True, solve_shfl=True)),
                   ("pls2", dict(p_split=True, log2_gates=True, solve_shfl=True, l2_shfl=True)),
                   ("plse", dict(p_split=True, log2_gates=True, solve_shfl=True, solve_eye=True)),
                   ("plsm", dict(p_split=True, log2_gates=True, solve_shfl=True, m_nomask=True)),
                   ("pls2mg", dict(p_split=True, log2_gates=True, solve_shfl=True, l2_shfl=True, m_nomask=True,
                                   g_nomask=True)),
                   # the 34th session's shipped row (pls2mg) with the inverse's zeros written once (z), beta read
                   # from the ring (zb), G written beside the inverse's blocks (zbg)
                   ("pls2mgz", dict(p_split=True, log2_gates=True, solve_shfl=True, l2_shfl=True, m_nomask=True,
                                    g_nomask=True, zero_once=True)),
                   ("pls2mgzb", dict(p_split=True, log2_gates=True, solve_shfl=True, l2_shfl=True, m_nomask=True,
                                     g_nomask=True, zero_once=True, beta_ring=True)),
                   ("pls2mgzbg", dict(p_split=True, log2_gates=True, solve_shfl=True, l2_shfl=True, m_nomask=True,
                                      g_nomask=True, zero_once=True, beta_ring=True, g_direct=True)),
                   # and the shipped row with both math warpgroups on one code path (math_pair)
                   ("pls2mgp", dict(p_split=True, log2_gates=True, solve_shfl=True, l2_shfl=True, m_nomask=True,
                                    g_nomask=True, math_pair=True)),
                   # the shipped row since the 35th session (pls2mgp) with pls2mgzbg's three (fewer auxiliary syncs:
                   # no faster before math_pair, when the math warpgroups set more of the period)
                   ("pls2mgpzbg", dict(p_split=True, log2_gates=True, solve_shfl=True, l2_shfl=True, m_nomask=True,
                                       g_nomask=True, math_pair=True, zero_once=True, beta_ring=True,
                                       g_direct=True)),
                   # the shipped row with the next chunk's M formed under the solve (m_ahead)
                   ("pls2mgpa", dict(p_split=True, log2_gates=True, solve_shfl=True, l2_shfl=True, m_nomask=True,
                                     g_nomask=True, math_pair=True, m_ahead=True)),
                   ("pls2mgpazbg", dict(p_split=True, log2_gates=True, solve_shfl=True, l2_shfl=True, m_nomask=True,
                                        g_nomask=True, math_pair=True, m_ahead=True, zero_once=True, beta_ring=True,
                                        g_direct=True)),
                   # the shipped row with the per-row gates formed by the producer warp (gates_in_loader), and with
                   # m_ahead and pls2mgzbg's three as well
                   ("pls2mgpg", dict(p_split=True, log2_gates=True, solve_shfl=True, l2_shfl=True, m_nomask=True,
                                     g_nomask=True, math_pair=True, gates_in_loader=True)),
                   ("pls2mgpazbgg", dict(p_split=True, log2_gates=True, solve_shfl=True, l2_shfl=True, m_nomask=True,
                                         g_nomask=True, math_pair=True, m_ahead=True, zero_once=True, beta_ring=True,
                                         g_direct=True, gates_in_loader=True))):
    ablate.SPECS["fwdnp128k3x" + tag] = dict(ablate.SPECS["fwdnp128k3x"],
                                             params=dict(ablate.SPECS["fwdnp128k3x"]["params"], **extra))


def compile_or_say_why(job: tuple) -> str | None:
    """ablate.py's compile of one (kernel, variant, workdir, base) in a worker process; None, or why it failed (as
    text: TVM's errors do not pickle, and one raised here would break the pool for every other job)"""
    try:
        ablate._compile_only(job)
        return None
    except Exception as e:
        return f"{type(e).__name__}: {str(e)[-300:]}"


def make_inputs(lens: list[int], H: int, HV: int, pad: int, seed: int):
    g = torch.Generator(device="cuda").manual_seed(seed)
    T_ = sum(lens) + pad
    q = torch.nn.functional.normalize(torch.randn(T_, H, K, device="cuda", generator=g), dim=-1).bfloat16()
    k = torch.nn.functional.normalize(torch.randn(T_, H, K, device="cuda", generator=g), dim=-1).bfloat16()
    v = torch.randn(T_, HV, K, device="cuda", generator=g).bfloat16()
    # a quarter of the heads without decay (g = 0), the rest decaying as Qwen3-Next's logsigmoid-style gates
    gl = -torch.nn.functional.softplus(torch.randn(T_, HV, device="cuda", generator=g)) * 0.3
    gl[:, : max(HV // 4, 1)] = 0.0
    beta = torch.sigmoid(torch.randn(T_, HV, device="cuda", generator=g))
    cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0).tolist()), dtype=torch.int32, device="cuda")
    h0 = torch.randn(len(lens), HV, K, K, device="cuda", generator=g) * 0.1
    return q, k, v, gl.contiguous(), beta.contiguous(), cu, h0


def plain_tables(lens: list[int], HV: int):
    """One segment per sequence (no context parallelism): seg_seq, ranges as the op's segment plan gives them."""
    N = len(lens)
    seg_seq = torch.arange(N, dtype=torch.int32, device="cuda")
    ranges = torch.zeros(N, HV, 3, dtype=torch.int32, device="cuda")
    ranges[:, :, 1] = torch.tensor([(n + BT - 1) // BT for n in lens], dtype=torch.int32, device="cuda")[:, None]
    ranges[:, :, 2] = 2  # each sequence's last (only) segment
    return seg_seq, ranges


def kernel_args(q, k, v, gl, beta, cu, h0, lens, H, HV, use_h0: bool):
    seg_seq, ranges = plain_tables(lens, HV)
    T_ = q.shape[0]
    N = len(lens)
    dummy = torch.zeros(T_, HV, BT, dtype=torch.bfloat16, device="cuda")
    return dict(q=q, k=k, v=v, A=dummy, z=dummy, g=gl, beta=beta, cu_seqlens=cu, h0=h0,
                o=torch.full((T_, HV, K), float("nan"), dtype=torch.bfloat16, device="cuda"),
                ht=torch.full((N, HV, K, K), float("nan"), device="cuda"),
                h=torch.empty(1, HV, K, K, dtype=torch.bfloat16, device="cuda"), seg_seq=seg_seq, ranges=ranges,
                cp_h0=torch.zeros(N, HV, K, K, device="cuda"), cp_out=torch.zeros(N, HV, K, K, device="cuda"),
                scale=K**-0.5, use_h0=int(use_h0), store_ht=1, state_v_first=0, store_o=1, store_h=0, warmup=0,
                group=HV // H)


def reference(lens, H, HV, pad, seed, use_h0):
    """A case's inputs and its float64 token recurrence (o, final state), made once for every kernel checked."""
    from flashqla.reference import gdn_recurrent_ref

    q, k, v, gl, beta, cu, h0 = make_inputs(lens, H, HV, pad, seed)
    o_ref, ht_ref = gdn_recurrent_ref(q[None].double(), k[None].double(), v[None].double(), gl[None].double(),
                                      beta[None].double(), scale=K**-0.5,
                                      initial_state=h0.double() if use_h0 else None, output_final_state=True,
                                      cu_seqlens=cu.long())
    return (q, k, v, gl, beta, cu, h0), o_ref[0], ht_ref


def check(kern, names, inputs, o_ref, ht_ref, lens, H, HV, use_h0) -> tuple[float, float, torch.Tensor, torch.Tensor]:
    """The kernel on a case's inputs (outputs poisoned with NaN): max |err| of o and the final state, and both."""
    x = kernel_args(*inputs, lens, H, HV, use_h0)
    kern(*[x[n] for n in names])
    torch.cuda.synchronize()
    T_real = sum(lens)
    o_err = (x["o"][:T_real].double() - o_ref[:T_real]).abs().max().item()
    tail = x["o"][T_real:]
    if tail.numel():
        assert (tail == 0).all().item(), "padding tail not zeroed"
    ht_err = (x["ht"].double() - ht_ref).abs().max().item()
    return o_err, ht_err, x["o"], x["ht"]


def time_ms(fn) -> float:
    """ablate.py's median of 20 CUDA-event timings (after 3 warm-up calls), in ms."""
    return ablate.time_us(fn) / 1e3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kernels", nargs="+", default=["fwdnp128", "fwdnp64"],
                    choices=[name for name in ablate.SPECS if name.startswith("fwdnp")])
    ap.add_argument("--time", nargs="*", default=["32,32:8192x4", "32,32:4096x8", "16,32:8192x4", "32,32:8192x1",
                                                  "16,64:8192x4", "32,32:2048x4"])
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "flashqla_ablate"))
    ap.add_argument("--masks", nargs="*", type=int, default=[],
                    help="time the ablate variant of --ablate-kernel at these masks (sums of NOPREP_ABLATIONS bits) "
                         "on the --time shapes, after the checks")
    ap.add_argument("--ablate-kernel", default="fwdnp128k3xpls2mgp",
                    choices=[name for name in ablate.SPECS if name.startswith("fwdnp128")],
                    help="the kernel whose pieces --masks skips (default: the shipped row; fwdnp128 before the "
                         "forty-ninth session)")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    if not os.path.exists(os.path.join(args.workdir, "common")):
        os.symlink(ablate.SRC / "common", os.path.join(args.workdir, "common"))
    # the compiles in parallel processes first (TileLang's cache; CUDA not yet initialised here), then each kernel from
    # the cache
    jobs = [(name, "cur", args.workdir, None) for name in args.kernels]
    if args.masks:
        jobs.append((args.ablate_kernel, "ablate", args.workdir, None))
    failed = set()
    with cf.ProcessPoolExecutor(len(jobs)) as pool:
        for (name, variant, *_), error in zip(jobs, pool.map(compile_or_say_why, jobs)):
            if error:  # one variant that does not compile leaves the others' checks and times
                failed.add((name, variant))
            print(f"FAILED to compile {name}/{variant}: {error}" if error else f"compiled {name}/{variant}", flush=True)
    kernels = {name: ablate.build(name, "cur", args.workdir) for name in args.kernels if (name, "cur") not in failed}
    if (args.ablate_kernel, "ablate") in failed:
        args.masks = []
    if not kernels:
        print("no kernel compiled")
        return 1
    print("correctness against the float64 recurrence (max |err|; o bf16, final state fp32)")
    cases = [([1000, 1, 64, 200, 129], 2, 4, 37, True), ([4096], 2, 8, 0, False), ([700, 2048, 63], 4, 4, 0, True),
             ([3000, 5000], 1, 2, 100, True)]
    worst = 0.0
    first_name = next(iter(kernels))
    for seed, (lens, H, HV, pad, use_h0) in enumerate(cases):
        inputs, o_ref, ht_ref = reference(lens, H, HV, pad, seed, use_h0)
        first = None  # the first kernel's outputs: the others are compared with them bit for bit
        for w, (kern, names, _) in kernels.items():
            o_err, ht_err, o, ht = check(kern, names, inputs, o_ref, ht_ref, lens, H, HV, use_h0)
            worst = max(worst, o_err, ht_err)
            same = ""
            if first is None:
                first = (o, ht)
            else:
                equal = torch.equal(o, first[0]) and torch.equal(ht, first[1])
                same = f"  {'bitwise equal to' if equal else 'differs from'} {first_name}"
            print(f"  {w:<10} lens={lens} H={H} HV={HV} pad={pad} h0={use_h0}: o {o_err:.3e}  ht {ht_err:.3e}{same}",
                  flush=True)
    ok = worst < 2e-2
    print(f"worst {worst:.3e}: {'PASS' if ok else 'FAIL'} (bound 2e-2, max abs: bf16 o of |o| ~ 1)")
    try:
        import flashqla
    except ImportError:
        flashqla = None
    print(f"\n{'shape':<16} {'op (prep+fwd) ms':>17} " + " ".join(f"{w + ' ms':>16}" for w in kernels)
          + "  speedup")
    for spec in args.time:
        heads, seqs = spec.split(":")
        H, HV = (int(s) for s in heads.split(","))
        L, n = (int(s) for s in seqs.split("x"))  # LENGTHxCOUNT, as the peer tables write them
        lens = [L] * n
        q, k, v, gl, beta, cu, h0 = make_inputs(lens, H, HV, 0, 123)
        row = []
        t_op = float("nan")
        if flashqla is not None:
            def op():
                flashqla.chunk_gated_delta_rule_fwd(q[None], k[None], v[None], gl[None], beta[None],
                                                    output_final_state=False, cu_seqlens=cu)
            t_op = time_ms(op)
        for w, (kern, names, _) in kernels.items():
            x = kernel_args(q, k, v, gl, beta, cu, h0, lens, H, HV, False)
            x["store_ht"] = 0
            row.append(time_ms(lambda x=x: kern(*[x[n_] for n_ in names])))
        print(f"{spec:<16} {t_op:17.3f} " + " ".join(f"{t:16.3f}" for t in row)
              + f"  {t_op / min(row):.2f}x", flush=True)
    if args.masks:
        kern, names, _ = ablate.build(args.ablate_kernel, "ablate", args.workdir)
        print(f"\nablations of {args.ablate_kernel} (ms): " + ", ".join(f"{b}: {n}" for b, (n, _, _) in
                                                                      NOPREP_ABLATIONS.items()))
        print(f"{'shape':<16} " + " ".join(f"{m:>8}" for m in args.masks))
        for spec in args.time:
            heads, seqs = spec.split(":")
            H, HV = (int(s) for s in heads.split(","))
            L, n = (int(s) for s in seqs.split("x"))
            lens = [L] * n
            q, k, v, gl, beta, cu, h0 = make_inputs(lens, H, HV, 0, 123)
            x = kernel_args(q, k, v, gl, beta, cu, h0, lens, H, HV, False)
            x["store_ht"] = 0
            ts = []
            for m in args.masks:
                x["ablate"] = m
                ts.append(time_ms(lambda: kern(*[x[n_] for n_ in names])))
            print(f"{spec:<16} " + " ".join(f"{t:8.3f}" for t in ts), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
