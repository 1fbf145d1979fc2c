"""The full-chunk rule of common/chunk_load.py: a kernel tests whether a chunk is full on the unclamped
difference (`t0 + BT <= seq_end`, `seq_end - t0 >= BT`), never as an equality of the clamped row count with
BT (`n_valid == BT`). So written, nvcc 13.0 compiled the test in one producer warp of the warp-specialized
chunk gradient into the predicate output of the min/max that forms n_valid, and that warp loaded partial
chunks by TMA: the next sequence's rows reached this one's gradients (benchmarks/results/H200_bwdc_ws.md,
"The NaN leak"). A CPU test over the kernel sources."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "tilelang_src"
# an equality (or inequality) between a clamped count (n_valid, n_rows, ...) and the chunk size
CLAMPED_EQ = re.compile(r"\bn_(?:valid|rows|real)\w*\s*[!=]=\s*(?:BT|64)\b|\b(?:BT|64)\s*[!=]=\s*n_(?:valid|rows|real)\w*")


QUOTED = re.compile(r"`[^`]*`")  # the rule quoted in docstrings and comments


def offending_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines()
            if CLAMPED_EQ.search(QUOTED.sub("", line.split("#", 1)[0]))]  # code, not comments or quotes


def test_the_pattern_catches_the_miscompiled_form():
    assert offending_lines("            if n_valid == BT:\n")
    assert offending_lines("        if tma_inputs and n_valid == BT:\n")
    assert offending_lines("    ok = BT != n_valid\n")
    assert not offending_lines("    full = seq_end - t0 >= BT\n")
    assert not offending_lines("    if t0 + BT <= seq_end:\n")
    assert not offending_lines("    # never n_valid == BT\n")
    assert not offending_lines("    never as `n_valid == BT` on the clamped count\n")


def test_no_kernel_tests_a_clamped_count_for_a_full_chunk():
    files = sorted(SRC.rglob("*.py"))
    assert len(files) > 5, "kernel sources not found"
    bad = {str(f.relative_to(SRC)): lines for f in files if (lines := offending_lines(f.read_text()))}
    assert not bad, f"full-chunk tests on a clamped count (use the unclamped difference): {bad}"
