"""Times of an A/B switch in one process, shared by the A/B scripts (streams_ab.py, prep_ab.py): per mode, the
run before the change and after it, alternated before / after / before / after (a drift of the clock hits both)
and the better of the two kept; CUDA-graph replay through bench_gdn.time_ms."""

from __future__ import annotations

from bench_gdn import time_ms


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
