"""benchmarks/fused_bwd_check.py --trace's source transform (run on the GPU, checked here on its text): every barrier
operation inside a role's chunk loop gets a clock64 stamp after it into dh0[0, 0, event, i], every wait also one
before it into dh0[0, 1, event, i] with the same event index (its blocked time is the difference), the events fit
dh0's 128 rows, and the traced kernel is still valid Python."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from fused_bwd_check import traced_source  # noqa: E402

KERNEL = (ROOT / "tilelang_src" / "sm90" / "gdn_bwd_fused.py").read_text()
STAMP = re.compile(r"dh0\[0, ([01]), (\d+), i\] = T\.cast\(T\.call_extern")


def test_every_wait_is_stamped_before_and_after_with_its_event_index():
    src, events = traced_source(KERNEL)
    ast.parse(src)
    assert 0 < len(events) <= 128
    lines = src.split("\n")
    waits = [n for n, line in enumerate(lines) if line.strip().startswith("T.barrier_wait(")]
    stamped = 0
    for n in waits:
        before = STAMP.search(lines[n - 1])
        after = STAMP.search(lines[n + 2])
        if after is None:  # a wait outside the chunk loops: not stamped at all
            assert before is None, lines[n]
            continue
        stamped += 1
        assert before is not None and before.group(1) == "1" and after.group(1) == "0", lines[n]
        e = int(after.group(2))
        assert int(before.group(2)) == e and events[e].endswith(lines[n].strip()), (lines[n], events[e])
    assert stamped == sum(": T.barrier_wait(" in e for e in events) > 20


def test_arrives_are_stamped_after_only():
    src, events = traced_source(KERNEL)
    lines = src.split("\n")
    for n, line in enumerate(lines):
        if line.strip().startswith("T.barrier_arrive(") and STAMP.search(lines[n + 2] if n + 2 < len(lines) else ""):
            assert not STAMP.search(lines[n - 1]) or STAMP.search(lines[n - 1]).group(1) == "0", line
    assert sum(": T.barrier_arrive(" in e for e in events) > 20
