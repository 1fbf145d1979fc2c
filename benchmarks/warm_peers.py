#!/usr/bin/env python3
"""The peers' first-use compiles of a benchmark's shapes, done ahead of it in parallel processes, one per head
configuration, so that bench_gdn.py's timed run finds them in the on-disk caches.

    python benchmarks/warm_peers.py --mode fwd                         # the 9 head configurations x 19 mixes
    python benchmarks/warm_peers.py --mode fwd --heads 16,64 32,32 --libs flash_qla,fla --jobs 9
    python benchmarks/warm_peers.py --mode fwd --dry-run                # the jobs, without a GPU
    python benchmarks/warm_peers.py --mode fwd --skip-done run1.json    # what an earlier run left

Why: FlashQLA (TileLang JIT) compiles each head configuration (and its context-parallel and block_DV variants) on
first use, tens of seconds each, and FLA's Triton kernels compile every autotuning candidate; in one benchmark process
these run one after another (about 90 s per head configuration on an H200 in the 46th session), which is why no
device call so far held the 171 forward shapes. The compiles are CPU work (nvcc, Triton's compiler), so a process per
head configuration runs them side by side. Every shape of a configuration is called once, forward or training step as
the benchmark's mode, so each specialization the peers pick from the lengths is compiled.

Fairness: the warm-up processes share the GPU, so the timings that autotuning takes there are not clean. They run with
TRITON_CACHE_AUTOTUNING=0: Triton's compiled kernels go to its cache, its autotuning choices do not, and the benchmark
process autotunes FLA again alone on the GPU (from compiled candidates, quickly). TileLang has no autotuning in
FlashQLA's path: its cached kernels are the ones it would build in the benchmark. The caches are wherever the
libraries keep them (scripts/gpu_bench.sh points TILELANG_CACHE_DIR and TRITON_CACHE_DIR at one folder per run).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent))


def plan_jobs(shapes: list) -> list[tuple[tuple[int, int], list[str]]]:
    """bench_gdn.shape_list's entries grouped by head configuration, in first-seen order, each shape's lengths as a
    comma list (what the worker's --mixes parses whatever the table named the shape, e.g. the published backward's
    8k_2seq): [((h_qk, h_v), ["4096,4096", ...])]"""
    jobs: dict[tuple[int, int], list[str]] = {}
    for _, _, hqk, hv, lengths in shapes:
        jobs.setdefault((hqk, hv), []).append(",".join(str(n) for n in lengths))
    return list(jobs.items())


def worker_command(heads: tuple[int, int], mixes: list[str], mode: str, libs: str) -> list[str]:
    """The command line of the worker process that warms one head configuration."""
    return [sys.executable, str(HERE), "--worker", "--mode", mode, "--libs", libs, "--heads", f"{heads[0]},{heads[1]}",
            "--mixes", *mixes]


def run_worker(args) -> int:
    """Each shape once per library (the forward, or the benchmark's training step or backward), then a sync: what a
    library compiles on first use for these shapes lands in its cache. Prints one line per library and shape."""
    import torch

    import bench_gdn

    libs = bench_gdn.load_libraries(args.libs, "warm")  # (not installed: nothing to warm)
    failed = 0
    for model, mix, hqk, hv, lengths in bench_gdn.shape_list(args):
        x = bench_gdn.make_inputs(lengths, hqk, hv)
        for name, (_, make) in libs.items():
            t0 = time.time()
            try:
                fn = make(x, args.mode)
                if fn is None:
                    continue
                fn()
                if torch.cuda.is_available():
                    torch.cuda.synchronize()
                print(f"[warm] ({hqk},{hv}) {mix} {name}: {time.time() - t0:.1f} s", flush=True)
            except Exception as exc:  # noqa: BLE001  (the benchmark reports the same failure in its row)
                failed += 1
                print(f"[warm] ({hqk},{hv}) {mix} {name} failed: {type(exc).__name__}: {exc}", flush=True)
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
    return 1 if failed else 0


def run_parallel(jobs, args) -> int:
    """One worker per head configuration, at most --jobs at a time, each within --timeout seconds of the start;
    prints each one's wall time and exit status as it ends, and its output to --log-dir (if given)."""
    env = dict(os.environ, TRITON_CACHE_AUTOTUNING="0", FLA_FLASH_QLA="0", PYTHONUNBUFFERED="1")
    log_dir = Path(args.log_dir) if args.log_dir else None
    if log_dir:
        log_dir.mkdir(parents=True, exist_ok=True)
    pending, running, bad = list(jobs), [], 0
    t_start = time.time()
    while pending or running:
        while pending and len(running) < args.jobs:
            heads, mixes = pending.pop(0)
            log = open(log_dir / f"warm_{heads[0]}_{heads[1]}.log", "w") if log_dir else subprocess.DEVNULL
            proc = subprocess.Popen(worker_command(heads, mixes, args.mode, args.libs), env=env, stdout=log,
                                    stderr=subprocess.STDOUT)
            running.append((heads, proc, time.time(), log))
        time.sleep(0.5)
        for item in list(running):
            heads, proc, t0, log = item
            late = time.time() - t_start > args.timeout
            if proc.poll() is None and not late:
                continue
            if proc.poll() is None:
                proc.kill()
                proc.wait()
                print(f"[warm] ({heads[0]},{heads[1]}): stopped at --timeout {args.timeout} s", flush=True)
                bad += 1
            else:
                print(f"[warm] ({heads[0]},{heads[1]}): rc {proc.returncode}, {time.time() - t0:.0f} s", flush=True)
                bad += proc.returncode != 0
            if log is not subprocess.DEVNULL:
                log.close()
            running.remove(item)
    print(f"[warm] {len(jobs)} head configurations in {time.time() - t_start:.0f} s, {bad} not done cleanly",
          flush=True)
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=["fwd", "bwd", "fwdbwd"], default="fwd")
    ap.add_argument("--heads", nargs="*", help="h_qk,h_v pairs (default: bench_gdn.py's for the mode)")
    ap.add_argument("--mixes", nargs="*", help="length mixes (default: bench_gdn.py's)")
    ap.add_argument("--published-bwd", action="store_true", help="as bench_gdn.py's")
    ap.add_argument("--libs", default="flash_qla,fla", help="the peers to warm (flashqla itself has no JIT)")
    ap.add_argument("--jobs", type=int, default=9, help="worker processes at a time")
    ap.add_argument("--timeout", type=float, default=300, help="seconds from the start after which workers stop")
    ap.add_argument("--log-dir", default=None, help="each worker's output in LOG_DIR/warm_HQK_HV.log")
    ap.add_argument("--skip-done", nargs="+", default=None, metavar="JSON",
                    help="as bench_gdn.py's: leave out the shapes these earlier runs measured")
    ap.add_argument("--dry-run", action="store_true", help="print the workers' commands and stop")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return run_worker(args)
    import json

    from bench_gdn import drop_done, shape_list

    shapes = shape_list(args)
    if args.skip_done:
        shapes = drop_done(shapes, [json.loads(Path(p).read_text()) for p in args.skip_done], args.mode)
    jobs = plan_jobs(shapes)
    if args.dry_run:
        for heads, mixes in jobs:
            print(" ".join(worker_command(heads, mixes, args.mode, args.libs)))
        return 0
    return run_parallel(jobs, args)


if __name__ == "__main__":
    sys.exit(main())
