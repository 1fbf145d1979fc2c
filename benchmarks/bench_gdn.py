#!/usr/bin/env python3
"""GDN chunked prefill benchmark: flashqla against FLA (Triton), FlashQLA (TileLang JIT) and
FlashInfer, each when importable, in one process on one GPU.

    python benchmarks/bench_gdn.py --mode fwd                       # 9 head configs x 19 length mixes
    python benchmarks/bench_gdn.py --mode fwd --heads 2,8 16,64 --mixes 1x32768 8192x4
    python benchmarks/bench_gdn.py --mode fwdbwd --heads 16,32 --mixes 1x8192 1x32768
    python benchmarks/bench_gdn.py --mode bwd                       # the published backward shapes
    python benchmarks/bench_gdn.py --mode fwd --skip-done run1.json # what run1 (cut short) did not measure

Inputs follow reference/anchors.md: packed varlen (B = 1, int32 cu_seqlens), q and k l2-normalized
bf16, v bf16, g = logsigmoid(randn)/16 fp32 with a quarter of the heads at g = 0, beta fp32, h0 fp32,
output_final_state=True, K = V = 128; flashqla and FLA also get cu_seqlens_cpu (the host copy
their users pass; flashqla plans its segments and V width from its longest sequence). Timing: a
CUDA graph of `--calls` calls, replayed `--reps` times, median per call (plain events when a library
cannot be captured; marked `*`).
Floor: max(bytes / 4.3 TB/s, flops / 790 TFLOP/s) with the minimum bytes and ~167 kFLOP per token
per v-head of the forward (x3 for a training step); see reference/anchors.md.
Where FlashInfer cannot run (not installed), its published H200 time (published_h200.csv, FlashQLA's
table) stands in for it as the peer `flashinfer_pub` of forward shapes, as issue 4's acceptance asks (counted in
`x best peer` on an H200 only; on another GPU the column is shown, not compared).
Writes results as JSON (--json) and a markdown table (--md).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("FLA_FLASH_QLA", "0")  # keep FLA on its own Triton kernels

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shapes import BWD_HEADS, BWD_SPLITS, BWD_TOTALS, HEAD_CONFIGS, LENGTH_MIXES, parse_lengths  # noqa: E402

BANDWIDTH = 4.3e12  # B/s, device-to-device copy measured on an H200
MATRIX_RATE = 790e12  # FLOP/s, dense bf16 measured on an H200
FWD_FLOP_PER_TOKEN_HEAD = 167e3
PUBLISHED = Path(__file__).resolve().parent / "published_h200.csv"


@functools.lru_cache(maxsize=None)
def _published_rows() -> tuple[dict, ...]:
    """The rows of published_h200.csv, read once per process."""
    import csv

    with PUBLISHED.open() as f:
        return tuple(csv.DictReader(f))


def published_bwd() -> dict:
    """(seqlens, h_qk, h_v) -> (FlashQLA ms, FLA ms) of the published H200 backward table: context for a
    backward run, never a peer of it (the acceptance compares peers measured in the same run)."""
    return {(r["seqlens"], int(r["h_qk"]), int(r["h_v"])): (float(r["flashqla_ms"]), float(r["fla_ms"]))
            for r in _published_rows() if r["direction"] == "bwd"}


def published_flashinfer() -> dict:
    """(seqlens, h_qk, h_v) -> FlashInfer's published forward ms on an H200."""
    return {(r["seqlens"], int(r["h_qk"]), int(r["h_v"])): float(r["flashinfer_ms"])
            for r in _published_rows() if r["direction"] == "fwd" and r["flashinfer_ms"]}


def floor_ms(T: int, N: int, hqk: int, hv: int, mode: str) -> float:
    fwd_bytes = 2 * T * hqk * 128 * 2 + 2 * T * hv * 128 * 2 + 2 * T * hv * 4 + 2 * N * hv * 128 * 128 * 4
    flops = FWD_FLOP_PER_TOKEN_HEAD * T * hv
    if mode != "fwd":  # backward reads the forward's inputs and do, writes their gradients: ~2x bytes, ~2x flops
        fwd_bytes, flops = (fwd_bytes * 3, flops * 3) if mode == "fwdbwd" else (fwd_bytes * 2, flops * 2)
    return max(fwd_bytes / BANDWIDTH, flops / MATRIX_RATE) * 1e3


def make_inputs(lengths: list[int], hqk: int, hv: int, seed: int = 0):
    g_ = torch.Generator(device="cuda").manual_seed(seed)
    T, N = sum(lengths), len(lengths)
    dev = "cuda"

    def rn(*shape):
        return torch.randn(*shape, device=dev, generator=g_)

    q = F.normalize(rn(1, T, hqk, 128), dim=-1).bfloat16()
    k = F.normalize(rn(1, T, hqk, 128), dim=-1).bfloat16()
    v = rn(1, T, hv, 128).bfloat16()
    g = F.logsigmoid(rn(1, T, hv)) / 16
    no_decay = torch.randperm(hv, device=dev, generator=g_)[: max(1, hv // 4)]
    g[..., no_decay] = 0
    beta = rn(1, T, hv).sigmoid()
    h0 = rn(N, hv, 128, 128)
    cu = torch.tensor([0] + list(torch.tensor(lengths).cumsum(0)), dtype=torch.int32, device=dev)
    return dict(q=q, k=k, v=v, g=g, beta=beta, initial_state=h0, cu_seqlens=cu)


# ---- libraries: name -> (version, make_fn(inputs, mode) -> callable)
def _flashqla():
    import flashqla

    def make(x, mode):
        cpu = x["cu_seqlens"].cpu()
        call = lambda **t: flashqla.chunk_gated_delta_rule(  # noqa: E731
            **t, output_final_state=True, cu_seqlens_cpu=cpu)
        return (lambda: call(**x)) if mode == "fwd" else _training_step(call, x, mode)

    return flashqla.__version__, make


def _flashqla_keep():
    """flashqla with save_chunk_states=True (the forward keeps the chunk states, the backward skips their
    recompute): bwd and fwdbwd only; an opt-in, not counted as flashqla's time or as a peer."""
    import flashqla

    def make(x, mode):
        if mode == "fwd":
            return None
        cpu = x["cu_seqlens"].cpu()
        call = lambda **t: flashqla.chunk_gated_delta_rule(**t, output_final_state=True,  # noqa: E731
                                                           save_chunk_states=True, cu_seqlens_cpu=cpu)
        return _training_step(call, x, mode)

    return flashqla.__version__, make


def _fla():
    import fla
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule

    def make(x, mode):
        cpu = x["cu_seqlens"].cpu()
        call = lambda **t: chunk_gated_delta_rule(**t, output_final_state=True, cu_seqlens_cpu=cpu)  # noqa: E731
        return (lambda: call(**x)) if mode == "fwd" else _training_step(call, x, mode)

    return getattr(fla, "__version__", "?"), make


def _flash_qla():
    import flash_qla

    def make(x, mode):
        call = lambda **t: flash_qla.chunk_gated_delta_rule(**t, output_final_state=True)  # noqa: E731
        return (lambda: call(**x)) if mode == "fwd" else _training_step(call, x, mode)

    return getattr(flash_qla, "__version__", "?"), make


def _flashinfer():
    import flashinfer
    from flashinfer.gdn_prefill import chunk_gated_delta_rule

    def make(x, mode):
        if mode != "fwd":
            return None
        alpha = x["g"][0].exp()
        args = dict(q=x["q"][0], k=x["k"][0], v=x["v"][0], g=alpha, beta=x["beta"][0], scale=128 ** -0.5,
                    initial_state=x["initial_state"].transpose(-1, -2).contiguous(), output_final_state=True,
                    cu_seqlens=x["cu_seqlens"].long())
        return lambda: chunk_gated_delta_rule(**args)

    return flashinfer.__version__, make


LIBRARIES = {"flashqla": _flashqla, "flashqla_keep": _flashqla_keep, "fla": _fla, "flash_qla": _flash_qla,
             "flashinfer": _flashinfer}


def load_libraries(names: str, tag: str) -> dict:
    """name -> (version, make) for each comma-separated LIBRARIES name that imports; the others are reported as
    `[tag] name: not available (...)` and left out."""
    libs = {}
    for name in names.split(","):
        try:
            libs[name] = LIBRARIES[name]()
        except Exception as exc:  # noqa: BLE001
            print(f"[{tag}] {name}: not available ({type(exc).__name__}: {exc})", flush=True)
    return libs


def _training_step(call, x, mode):
    """fwdbwd: one autograd step, forward + backward through `call`, gradients of all six inputs.
    bwd: the backward alone (one forward outside the timed region, its graph kept for every replay)."""
    names = ("q", "k", "v", "g", "beta", "initial_state")
    leaves = {n: x[n].detach().clone().requires_grad_() for n in names}
    do = torch.randn_like(x["v"])
    dht = torch.randn_like(x["initial_state"]) / 8

    def step():
        for n in names:
            leaves[n].grad = None
        o, ht = call(**leaves, cu_seqlens=x["cu_seqlens"])
        torch.autograd.backward([o, ht], [do, dht])

    if mode != "bwd":
        return step
    # the autograd engine runs each backward kernel on its forward's stream: the forward runs on the
    # stream that time_ms captures on, or the capture of the backward fails (and breaks later captures)
    with torch.cuda.stream(side_stream()):
        o, ht = call(**leaves, cu_seqlens=x["cu_seqlens"])
    torch.cuda.current_stream().wait_stream(side_stream())
    inputs = [leaves[n] for n in names]

    def backward_only():
        torch.autograd.grad([o, ht], inputs, [do, dht], retain_graph=True)

    return backward_only


_SIDE_STREAM = []


def side_stream() -> torch.cuda.Stream:
    """The one non-default stream that every warm-up, capture and untimed forward runs on."""
    if not _SIDE_STREAM:
        _SIDE_STREAM.append(torch.cuda.Stream())
    return _SIDE_STREAM[0]


def warm_up(fn) -> None:
    """Three calls of fn on the side stream (first-use compiles, allocator blocks), finished before returning."""
    s = side_stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()


def capture_graph(fn, calls: int) -> torch.cuda.CUDAGraph:
    """A CUDA graph of `calls` calls of fn, captured on the side stream after warm_up (raises where fn cannot be
    captured: a library that synchronizes)."""
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side_stream()):
        for _ in range(calls):
            fn()
    return graph


def time_ms(fn, calls: int, reps: int) -> tuple[float, bool]:
    """Median ms per call over `reps` replays of a CUDA graph of `calls` calls (graph=True), or of
    `reps` event-timed loops when the graph cannot be captured (graph=False)."""
    warm_up(fn)
    samples = []
    try:
        graph = capture_graph(fn, calls)
        graph.replay()
        torch.cuda.synchronize()
        runner, captured = graph.replay, True
    except Exception:  # noqa: BLE001  (a library that synchronizes cannot be captured)
        torch.cuda.synchronize()

        def runner():
            for _ in range(calls):
                fn()

        captured = False
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        runner()
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end) / calls)
    return statistics.median(samples), captured


def versions(libs) -> dict:
    info = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
            "python": sys.version.split()[0]}
    try:
        info["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                        cwd=Path(__file__).resolve().parent).stdout.strip()
    except OSError:
        info["commit"] = ""
    # the commit of the code measured: the one the installed library's kernels were generated from (its build
    # manifest), else FLASHQLA_COMMIT (scripts/gpu_bench.sh), else this checkout's, which may be stale on a GPU
    # machine that received a copy of the tree (the manifest first: in the 43rd session .carry/COMMIT named a wheel
    # that a warm machine's earlier install shadowed)
    built = None
    try:
        import flashqla

        built = flashqla.build_manifest().get("source_commit")
    except Exception:  # noqa: BLE001  (flashqla not importable: the peers alone)
        pass
    info["commit"] = built or os.environ.get("FLASHQLA_COMMIT") or info["commit"] or "?"
    info.update({f"{name} version": ver for name, (ver, _) in libs.items()})
    return info


def shape_list(args):
    heads = [tuple(int(x) for x in h.split(",")) for h in args.heads] if args.heads else None
    if args.mode == "bwd" and (heads is None or args.published_bwd):
        out = []
        for hqk, hv in BWD_HEADS:
            if heads is not None and (hqk, hv) not in heads:
                continue
            for tname, total in BWD_TOTALS.items():
                for n in BWD_SPLITS:
                    base = total // n
                    out.append((f"hk{hqk}_hv{hv}", f"{tname}_{n}seq", hqk, hv, [base] * (n - 1) + [total - base * (n - 1)]))
        return out
    heads = heads or [(hqk, hv) for _, hqk, hv in HEAD_CONFIGS]
    names = {(hqk, hv): name for name, hqk, hv in HEAD_CONFIGS}
    mixes = args.mixes or list(LENGTH_MIXES)
    return [(names.get(h, f"h{h[0]}/{h[1]}"), m, h[0], h[1], parse_lengths(m)) for h in heads for m in mixes]


def drop_done(shapes: list, runs: list[dict], mode: str) -> list:
    """shape_list's entries that none of the earlier runs measured (a row with a flashqla time counts as measured;
    the runs must be of `mode`)."""
    done = set()
    for run in runs:
        if run["mode"] != mode:
            raise ValueError(f"--skip-done: a {run['mode']} run given to a {mode} run")
        done |= {(r["seqlens"], r["h_qk"], r["h_v"]) for r in run["rows"] if "flashqla" in r["ms"]}
    return [s for s in shapes if (s[1], s[2], s[3]) not in done]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=["fwd", "bwd", "fwdbwd"], default="fwd",
                    help="fwd: forward only; bwd: the backward alone (after one untimed forward); "
                         "fwdbwd: one autograd training step")
    ap.add_argument("--heads", nargs="*", help="h_qk,h_v pairs (default: the 9 Qwen configurations)")
    ap.add_argument("--published-bwd", action="store_true",
                    help="--mode bwd with --heads: the published backward table's shapes (8k and 32k tokens in 1, 2, "
                         "4, 8 sequences) of those heads, instead of the length mixes")
    ap.add_argument("--mixes", nargs="*", help="length mixes such as 1x32768 4096+28672 8192x4 or 100,200")
    ap.add_argument("--libs", default="flashqla,fla,flash_qla,flashinfer")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", default=None)
    ap.add_argument("--md", default=None)
    ap.add_argument("--skip-done", nargs="+", default=None, metavar="JSON",
                    help="leave out the shapes that these earlier runs' JSON (of the same mode) already measured: a "
                         "table too long for one device call goes on in the next, and --render joins the runs")
    ap.add_argument("--render", nargs="+", default=None, metavar="JSON",
                    help="write --md from the JSON of earlier runs instead of measuring; several runs (e.g. one "
                         "head configuration per device call) of the same commit, mode and GPU become one table")
    args = ap.parse_args()
    if args.published_bwd and args.mode != "bwd":
        ap.error("--published-bwd selects backward shapes: use it with --mode bwd")
    if args.render:
        info, mode, rows = merge_runs([json.loads(Path(p).read_text()) for p in args.render])
        shown = list(dict.fromkeys(n for r in rows for n in r["ms"]))  # libraries, in row order
        Path(args.md).write_text(markdown(info, mode, rows, shown))
        return 0

    libs = load_libraries(args.libs, "bench")
    info = versions(libs)
    info["command"] = "python " + " ".join([Path(sys.argv[0]).as_posix()] + sys.argv[1:])
    info["date"] = time.strftime("%Y-%m-%d")
    print("[bench] " + ", ".join(f"{k}: {v}" for k, v in info.items()), flush=True)
    mode = args.mode
    stand_in = published_flashinfer() if mode == "fwd" and "flashinfer" not in libs else {}
    shown = list(libs) + (["flashinfer_pub"] if stand_in else [])
    rows = []
    shapes = shape_list(args)
    if args.skip_done:
        shapes = drop_done(shapes, [json.loads(Path(p).read_text()) for p in args.skip_done], mode)
        print(f"[bench] {len(shapes)} shapes left after --skip-done", flush=True)
    for model, mix, hqk, hv, lengths in shapes:
        t_row = time.time()
        x = make_inputs(lengths, hqk, hv)
        T, N = sum(lengths), len(lengths)
        row = {"model": model, "seqlens": mix, "h_qk": hqk, "h_v": hv, "ms": {}, "graph": {},
               "floor_ms": floor_ms(T, N, hqk, hv, mode)}
        for name, (_, make) in libs.items():
            try:
                fn = make(x, mode)
                if fn is None:
                    continue
                t0 = time.time()
                ms, captured = time_ms(fn, args.calls, args.reps)
                row["ms"][name], row["graph"][name] = ms, captured
                if time.time() - t0 > 10:
                    print(f"[bench]   ({name} took {time.time() - t0:.0f} s incl. first-use compilation)", flush=True)
            except Exception as exc:  # noqa: BLE001
                print(f"[bench] {name} failed on {model} {mix}: {type(exc).__name__}: {exc}", flush=True)
            torch.cuda.empty_cache()
        if (mix, hqk, hv) in stand_in:  # published, not measured here
            row["ms"]["flashinfer_pub"], row["graph"]["flashinfer_pub"] = stand_in[(mix, hqk, hv)], True
        peers = compared_peers(row["ms"], info["gpu"])
        ours = row["ms"].get("flashqla")
        if ours and peers:
            row["best_peer"] = min(peers, key=peers.get)
            row["speedup_vs_best"] = peers[row["best_peer"]] / ours
        if ours:
            row["pct_floor"] = 100 * row["floor_ms"] / ours
        rows.append(row)
        print(format_row(row, shown) + f" | {time.time() - t_row:.1f} s", flush=True)  # (the shape's wall time)
        write_results(args, info, rows, shown)  # after every row: a run cut short keeps what it measured
    print(summary(rows))
    return 0


def write_results(args, info, rows, shown) -> None:
    if args.json:
        Path(args.json).write_text(json.dumps({"info": info, "mode": args.mode, "rows": rows}, indent=1))
    if args.md:
        Path(args.md).write_text(markdown(info, args.mode, rows, shown))


def format_row(row, libs) -> str:
    cells = [f"{row['model']:>15s} {row['seqlens']:>12s} ({row['h_qk']:2d},{row['h_v']:2d})"]
    for name in libs:
        if name in row["ms"]:
            cells.append(f"{name} {row['ms'][name]:7.3f}{'' if row['graph'][name] else '*'}")
    if "speedup_vs_best" in row:
        cells.append(f"x{row['speedup_vs_best']:.2f} vs {row['best_peer']}")
    if "pct_floor" in row:
        cells.append(f"{row['pct_floor']:.0f}% of floor")
    return " | ".join(cells)


def compared_peers(ms: dict, gpu: str) -> dict:
    """The peers' times that `x best peer` compares with: every library's but flashqla's own (and its keep-states
    variant), and FlashInfer's published times only on the GPU they were published for (an H200): on another GPU
    they are shown, not compared."""
    return {k: v for k, v in ms.items()
            if k not in ("flashqla", "flashqla_keep") and (k != "flashinfer_pub" or "H200" in gpu)}


def summary(rows) -> str:
    sp = [r["speedup_vs_best"] for r in rows if "speedup_vs_best" in r]
    pf = [r["pct_floor"] for r in rows if "pct_floor" in r]
    out = [f"[bench] {len(rows)} shapes"]
    if sp:
        geo = 2 ** statistics.fmean([__import__("math").log2(s) for s in sp])
        out.append(f"flashqla fastest in {sum(s >= 1 for s in sp)}/{len(sp)}; geomean speedup vs best peer {geo:.2f}x "
                   f"(min {min(sp):.2f}x, max {max(sp):.2f}x)")
    if pf:
        out.append(f"median % of floor {statistics.median(pf):.0f}%")
    return "; ".join(out)


def merge_runs(runs: list[dict]) -> tuple[dict, str, list[dict]]:
    """One table from several runs: they must share the commit, mode, GPU and library versions (each row was
    timed with its peers in one process; rows of different runs were not). The header keeps every run's
    command and date, in order."""
    keys = [k for k in runs[0]["info"] if k not in ("command", "date")]
    for run in runs[1:]:
        if run["mode"] != runs[0]["mode"]:
            raise ValueError(f"runs of different modes: {runs[0]['mode']} and {run['mode']}")
        for k in keys:
            if run["info"].get(k) != runs[0]["info"][k]:
                raise ValueError(f"runs differ in {k}: {runs[0]['info'][k]} and {run['info'].get(k)}")
    info = dict(runs[0]["info"])
    if len(runs) > 1:
        info["command"] = " ; ".join(f"({i + 1}) {r['info']['command']}" for i, r in enumerate(runs))
        info["date"] = " ; ".join(dict.fromkeys(r["info"]["date"] for r in runs))
    return info, runs[0]["mode"], [row for run in runs for row in run["rows"]]


def markdown(info, mode, rows, libs) -> str:
    lines = [f"# GDN {mode} benchmark ({info['gpu']})", "",
             "| " + " | ".join(f"{k}" for k in info) + " |", "|" + "---|" * len(info),
             "| " + " | ".join(str(v) for v in info.values()) + " |", "",
             "Times in ms per call (median of CUDA-graph replays; `*` = not capturable, event-timed"
             + ("; `flashinfer_pub` = FlashInfer's published H200 time, not measured here"
                + ("" if "H200" in info["gpu"] else " (not in `x best peer`: this GPU is not an H200)")
                if "flashinfer_pub" in libs else "")
             + ("; `flashqla_keep` = flashqla with `save_chunk_states=True` (not in `x best peer`)"
                if "flashqla_keep" in libs else "") + ").", "",
             "| model | seqlens | (h_qk, h_v) | " + " | ".join(libs) + " | x best peer | floor ms | % of floor |",
             "|---|---|---|" + "---|" * (len(libs) + 3)]
    for r in rows:
        cells = [f"{r['ms'][n]:.3f}{'' if r['graph'][n] else '*'}" if n in r["ms"] else "-" for n in libs]
        lines.append(f"| {r['model']} | {r['seqlens']} | ({r['h_qk']}, {r['h_v']}) | " + " | ".join(cells) +
                     f" | {r.get('speedup_vs_best', float('nan')):.2f} | {r['floor_ms']:.3f} | "
                     f"{r.get('pct_floor', float('nan')):.0f}% |")
    lines += ["", summary(rows), ""]
    pub = published_bwd() if mode == "bwd" else {}
    if "flashqla" in libs and any((r["seqlens"], r["h_qk"], r["h_v"]) in pub for r in rows):
        lines += ["Context, not a same-run comparison: the published H200 backward times of FlashQLA and FLA "
                  "(published_h200.csv, FlashQLA's table; other machine and versions).", "",
                  "| model | seqlens | (h_qk, h_v) | flashqla | flash_qla published | fla published | "
                  "x flash_qla published |", "|---|---|---|---|---|---|---|"]
        for r in rows:
            key = (r["seqlens"], r["h_qk"], r["h_v"])
            if key in pub and "flashqla" in r["ms"]:
                fq, fl = pub[key]
                lines.append(f"| {r['model']} | {r['seqlens']} | ({r['h_qk']}, {r['h_v']}) | {r['ms']['flashqla']:.3f} "
                             f"| {fq:.3f} | {fl:.3f} | {fq / r['ms']['flashqla']:.2f} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
