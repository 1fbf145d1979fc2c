#!/usr/bin/env python3
"""The fused backward kernel (tilelang_src/sm90/gdn_bwd_fused.py) against the pair it replaces at one v-head per
qk-head: the state-gradient pass (gdn_bwd_dh.py, main pass, no context parallelism) followed by the chunk gradient
(gdn_bwd_chunk_ws.py with the gmax 1 variant's parameters), compiled with TileLang's JIT on the GPU machine, on the
same inputs (random bf16 Q, K, V, dO, A, chunk states h; chunk-local gate cumsums of random decays; dht).

Prints per (heads, sequence mix): the largest gap of each output (dq, dk, dv, dg, dbeta, dh0) relative to the
pair's largest magnitude, and the median time over interleaved rounds of the pair (its two kernels) and of the
fused kernel (outputs poisoned with NaN before the compared run).

--trace: the timeline of one CTA instead (the first v-head's first segment): a copy of the kernel with a clock64
stamp after every mbarrier wait and arrive of every role (and at the top of each role's chunk loop), and one before
every wait, written into dh0 (which the traced run does not store otherwise; its outputs are not compared); prints
each event's median offset from WA's chunk start over the middle chunks, in cycles, in time order, the chunk period,
and then each wait's median time blocked, longest first (where the roles wait on each other).

    PYTHONPATH=<site with tilelang> python benchmarks/fused_bwd_check.py [--heads 16 32] [--mixes 8192x4 1024x8]
        [--trace]
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ablate  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from barrier_protocol_sim import role_spans  # noqa: E402

BT, K = 64, 128
OUTPUTS = ("dq", "dk", "dv", "dg", "dbeta", "dh0")
ablate.SPECS["bwdfused"] = dict(file=ablate.SRC / "sm90" / "gdn_bwd_fused.py", factory="gdn_bwd_fused_sm90", params={},
                                fix=[], last_param="", ablations={}, combos=[], inputs=None, unit="us",
                                variants=["cur"])
# the shipped sm90 family's parameters (tilelang_src/variants.py): dS~ stored by TMA; the gmax 1 chunk gradient
PAIR = ("bwddht", "bwdcwspl")


def traced_source(src: str) -> tuple[str, list[str]]:
    """The kernel source with a stamp after every barrier operation inside the roles' chunk loops (and at each loop's
    top) into dh0[0, 0, event, chunk], and one before every wait into dh0[0, 1, event, chunk] (the wait's own event
    index), and the events' names (role: the line stamped), by event index. The roles and their threads are
    scripts/barrier_protocol_sim.py's; each role's first thread stamps."""
    lines, events, out, in_loop = src.split("\n"), [], [], None
    starts, _ = role_spans(lines)
    first_tx = {name: sum(w for _, _, w in starts[:n]) for n, (name, _, _) in enumerate(starts)}
    role_at = {pos: name for name, pos, _ in starts}
    role = None
    for n, line in enumerate(lines):
        text, indent = line.strip(), len(line) - len(line.lstrip())
        if in_loop is not None and indent > in_loop and text.startswith("T.barrier_wait("):
            out += [f"{' ' * indent}if {lead} and hv == 0 and seg == 0 and i < 128:",
                    f"{' ' * indent}    dh0[0, 1, {len(events)}, i] = T.cast("
                    f"T.call_extern(\"int64\", \"clock64\") - t_base, \"float32\")"]
        out.append(line)
        if n in role_at:
            role, in_loop = role_at[n], None
            lead = f"tx == {first_tx[role]}"
        if text.startswith("tx = T.get_thread_binding()"):
            out.append(" " * indent + 't_base = T.alloc_var("int64")')
        if text.startswith("T.set_max_nreg("):
            out.append(" " * indent + 't_base = T.call_extern("int64", "clock64")')
        if in_loop is not None and text and indent <= in_loop:
            in_loop = None
        stamp = None
        if text.startswith("for i in T.serial(n_iter):") and role:
            in_loop = indent
            stamp, indent = f"{role}: chunk start", indent + 4
        elif in_loop is not None and re.match(r"T\.barrier_(wait|arrive)\(", text):
            stamp = f"{role}: {text}"
        if stamp:
            events.append(stamp)
            pad = " " * indent
            out += [f"{pad}if {lead} and hv == 0 and seg == 0 and i < 128:",
                    f"{pad}    dh0[0, 0, {len(events) - 1}, i] = T.cast("
                    f"T.call_extern(\"int64\", \"clock64\") - t_base, "
                    f"\"float32\")"]
    assert len(events) <= 128
    return "\n".join(out), events


def lengths_of(mix: str) -> list[int]:
    """'8192x4' -> [8192] * 4; '1000+3000+77' -> [1000, 3000, 77]."""
    if "x" in mix:
        n, c = mix.split("x")
        return [int(n)] * int(c)
    return [int(x) for x in mix.split("+")]


def inputs(lengths: list[int], HV: int, seed: int = 0) -> dict:
    """Every input of both paths, and their outputs allocated (one v-head per qk-head: H == HV)."""
    import torch

    dev = "cuda"
    g = torch.Generator(device=dev).manual_seed(seed)
    T_, N = sum(lengths), len(lengths)
    cu = torch.tensor([0] + lengths, device=dev).cumsum(0).to(torch.int32)
    decay = -torch.rand(T_, HV, device=dev, generator=g) * 0.1  # per-token log decay
    g_cumsum = torch.empty_like(decay)
    for s, e in zip(cu[:-1].tolist(), cu[1:].tolist()):
        for c0 in range(s, e, BT):
            g_cumsum[c0:min(c0 + BT, e)] = decay[c0:min(c0 + BT, e)].cumsum(0)
    n_chunks = [(n + BT - 1) // BT for n in lengths]
    nh = (T_ + BT - 1) // BT + N  # chunk slots
    x = dict(
        q=torch.randn(T_, HV, K, device=dev, generator=g).bfloat16(),
        k=torch.nn.functional.normalize(torch.randn(T_, HV, K, device=dev, generator=g), dim=-1).bfloat16(),
        v=torch.randn(T_, HV, K, device=dev, generator=g).bfloat16(),
        d_o=torch.randn(T_, HV, K, device=dev, generator=g).bfloat16(),
        A=(torch.randn(T_, HV, BT, device=dev, generator=g) * 0.1).bfloat16(),
        g_cumsum=g_cumsum, beta=torch.rand(T_, HV, device=dev, generator=g), cu_seqlens=cu,
        h=(torch.randn(nh, HV, K, K, device=dev, generator=g) * 0.1).bfloat16(),
        dht=torch.randn(N, HV, K, K, device=dev, generator=g) * 0.1,
        dh=torch.zeros(nh, HV, K, K, dtype=torch.bfloat16, device=dev),
        dq=torch.empty(T_, HV, K, dtype=torch.bfloat16, device=dev),
        dk=torch.empty(T_, HV, K, dtype=torch.bfloat16, device=dev),
        dv=torch.empty(T_, HV, K, dtype=torch.bfloat16, device=dev),
        dg=torch.empty(T_, HV, device=dev), dbeta=torch.empty(T_, HV, device=dev),
        dh0=torch.empty(N, HV, K, K, device=dev))
    # one segment per sequence (no context parallelism): seg_plan.py's reverse-table rows (first chunk, count,
    # flags 2: the sequence's first and last segment)
    ranges = torch.zeros(N, HV, 3, dtype=torch.int32, device=dev)
    ranges[:, :, 1] = torch.tensor(n_chunks, dtype=torch.int32, device=dev)[:, None]
    ranges[:, :, 2] = 2
    x.update(seg_seq=torch.arange(N, dtype=torch.int32, device=dev), ranges=ranges,
             cp_ds=torch.zeros(N, HV, K, K, device=dev), cp_out=torch.zeros(N, HV, K, K, device=dev),
             scale=K**-0.5, use_dht=1, store_dh0=1, state_v_first=0, warmup=0, group=1)
    return x


def main() -> int:
    import torch

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--heads", nargs="+", type=int, default=[16, 32])
    ap.add_argument("--mixes", nargs="+", default=["8192x4", "1024x8", "1000+3000+77+4000"])
    ap.add_argument("--rounds", type=int, default=5, help="timed rounds (0: compare only, e.g. under a profiler)")
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "flashqla_ablate"))
    ap.add_argument("--params", nargs="+", default=["{}"],
                    help="the fused kernel factory's arguments, a Python dict per variant (each timed beside the pair)")
    ap.add_argument("--trace", action="store_true", help="one CTA's timeline (see above) instead of the comparison")
    args = ap.parse_args()
    variants = [f"bwdfused{j}" for j in range(len(args.params))]
    for name, params in zip(variants, args.params):
        ablate.SPECS[name] = dict(ablate.SPECS["bwdfused"], params=eval(params))
    ablate.SPECS["bwdfused"]["params"] = eval(args.params[0])  # --trace's
    os.makedirs(args.workdir, exist_ok=True)
    if not os.path.exists(os.path.join(args.workdir, "common")):
        os.symlink(ablate.SRC / "common", os.path.join(args.workdir, "common"))
    if args.trace:
        return trace(args)
    jobs = [(name, "cur", args.workdir, None) for name in (*PAIR, *variants)]
    with cf.ProcessPoolExecutor(len(jobs)) as pool:  # the compiles run in parallel (forked: SPECS as above)
        list(pool.map(ablate._compile_only, jobs))
    kern = {name: ablate.build(name, "cur", args.workdir) for name in (*PAIR, *variants)}  # from TileLang's cache
    print("compiled", ", ".join(kern), flush=True)

    def call(name, x):
        fn, names, _ = kern[name]
        fn(*[x[n] for n in names])

    for j, params in enumerate(args.params):
        print(f"variant {j}: {params}")
    print(f"{'HV':>4} {'mix':<20} {'pair us':>9} {'variant':>7} {'fused us':>9} {'fused/pair':>10}  "
          f"max |fused - pair| / max |pair|")
    for HV in args.heads:
        for mix in args.mixes:
            x = inputs(lengths_of(mix), HV)
            xf = {name: dict(x, **{o: torch.empty_like(x[o]) for o in OUTPUTS}) for name in variants}

            def pair():
                call("bwddht", x)
                call("bwdcwspl", x)

            runs = {name: (lambda name=name: call(name, xf[name])) for name in variants}
            # each path's outputs poisoned, one run, copied (ablate.py's)
            ref = ablate.outputs_of_a_run({}, pair, x, OUTPUTS, HV, HV)
            gaps = {}
            for name, run in runs.items():
                got = ablate.outputs_of_a_run({}, run, xf[name], OUTPUTS, HV, HV)
                gaps[name] = {o: ((got[o] - ref[o]).abs().max() / ref[o].abs().max().clamp_min(1e-30)).item()
                              for o in OUTPUTS}
            times = {"pair": [], **{name: [] for name in variants}}
            for _ in range(args.rounds):  # interleaved
                times["pair"].append(ablate.time_us(pair))
                for name, run in runs.items():
                    times[name].append(ablate.time_us(run))
            med = {k: sorted(v)[len(v) // 2] if v else float("nan") for k, v in times.items()}
            for j, name in enumerate(variants):
                gap_text = " ".join(f"{o} {g:.1e}" for o, g in gaps[name].items())
                print(f"{HV:>4} {mix:<20} {med['pair']:9.1f} {j:>7} {med[name]:9.1f} {med[name] / med['pair']:10.3f}  "
                      f"{gap_text}", flush=True)
    return 0


def trace(args) -> int:
    """--trace: per (heads, mix), the traced kernel's events of its first CTA, as offsets from WA's chunk start."""
    import torch

    src, events = traced_source(ablate.SPECS["bwdfused"]["file"].read_text())
    path = Path(args.workdir) / "gdn_bwd_fused_traced.py"
    path.write_text(src)
    ablate.SPECS["bwdfusedtr"] = dict(ablate.SPECS["bwdfused"], file=path)
    fn, names, _ = ablate.build("bwdfusedtr", "cur", args.workdir)
    for HV in args.heads:
        assert HV >= 2, "--trace writes the stamps before waits into dh0's second v-head"
        for mix in args.mixes:
            lengths = lengths_of(mix)
            x = inputs(lengths, HV)
            x["store_dh0"] = 0
            x["dh0"].fill_(float("nan"))
            for _ in range(3):  # the last run's stamps (warm caches and clocks)
                fn(*[x[n] for n in names])
            torch.cuda.synchronize()
            n = min((lengths[0] + BT - 1) // BT, 128)
            st = x["dh0"][0, 0, :len(events), :n].double().cpu()  # [event, chunk]
            mid = list(range(2, n - 2)) if n > 6 else list(range(n))
            start = st[0]  # WA's chunk start
            period = (start[1:] - start[:-1])[mid[:-1]].median().item() if n > 1 else float("nan")
            print(f"HV {HV} mix {mix}: {n} chunks in the first CTA, median period {period:.0f} cycles "
                  f"(chunks {mid[0]}..{mid[-1]}); event offsets from WA's chunk start, cycles (median, min, max):")
            offs = [((st[e, mid] - start[mid]).median().item(), (st[e, mid] - start[mid]).min().item(),
                     (st[e, mid] - start[mid]).max().item(), events[e]) for e in range(len(events))]
            for med, lo, hi, name in sorted(offs):
                print(f"  {med:8.0f} {lo:8.0f} {hi:8.0f}  {name}")
            before = x["dh0"][0, 1, :len(events), :n].double().cpu()
            waits = sorted((((st[e, mid] - before[e, mid]).median().item(), events[e]) for e in range(len(events))
                            if ": T.barrier_wait(" in events[e]), reverse=True)
            print(f"HV {HV} mix {mix}: median cycles blocked per wait, longest first (a role's idle time):")
            for med, name in waits[:16]:
                print(f"  {med:8.0f}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
