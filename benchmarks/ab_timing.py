"""Times of an A/B switch in one process, shared by the A/B scripts (streams_ab.py, prep_ab.py): per mode, the
run before the change and after it, alternated before / after / before / after (a drift of the clock hits both)
and the better of the two kept; CUDA-graph replay through bench_gdn.time_ms."""

from __future__ import annotations

import argparse

import torch

import flashqla
from bench_gdn import time_ms


def ab_args(doc: str, heads: list[str], mixes: list[str]) -> argparse.Namespace:
    """The A/B scripts' command line: --heads, --mixes (defaults given), --calls, --reps."""
    ap = argparse.ArgumentParser(description=doc)
    ap.add_argument("--heads", nargs="+", default=heads)
    ap.add_argument("--mixes", nargs="+", default=mixes)
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--reps", type=int, default=7)
    return ap.parse_args()


def print_header(modes, before: tuple[str, str], after: tuple[str, str], last: str) -> None:
    """The GPU and the library's commit, then the markdown table's head: per mode before / after / ratio, and a
    last column. before and after: (the setting's name in the title, its word in the column heads)."""
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, flashqla "
          f"{flashqla.build_manifest().get('source_commit')}; ms, {before[0]} / {after[0]} / ratio")
    print("| (h_qk, h_v) | seqlens | " + " | ".join(f"{m} {before[1]} | {m} {after[1]} | x" for m in modes)
          + f" | {last} |")
    print("|---|---|" + "---|---|---|" * len(modes) + "---|")


def ab_cells(modes, make_fn, switch, calls: int, reps: int, labels=("before", "after")) -> list[str]:
    """Markdown cells per mode: ms before, ms after, before / after. make_fn(mode) builds the timed callable
    (after switch(after) has set the mode of the op); labels name the two settings in the warnings."""
    ms = {}
    for mode in modes:
        for after in (False, True, False, True):
            switch(after)
            t, captured = time_ms(make_fn(mode), calls, reps)
            ms[(mode, after)] = min(ms.get((mode, after), float("inf")), t)
            if not captured:
                print(f"warning: {mode} {labels[after]} not captured in a CUDA graph")
    cells = []
    for mode in modes:
        a, b = ms[(mode, False)], ms[(mode, True)]
        cells += [f"{a:.3f}", f"{b:.3f}", f"{a / b:.2f}"]
    return cells
