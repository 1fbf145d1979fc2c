"""benchmarks/ablate.py's `fix` and `ablate` variants of the kernel files: every marker matches, every guarded block
stays inside its indentation, and the rewritten source parses (a stale marker made the eighteenth session's first
GPU run of the prep's ablation fail at import, after its install and compile time had been spent). The prep-free
forward's kernels (fwdnp*, registered by benchmarks/noprep_check.py) are among them since the forty-ninth session: one
of their markers had gone stale since the 32nd session's K ring of KS stages."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import ablate  # noqa: E402
import noprep_check  # noqa: E402,F401  (registers the fwdnp* specs and their ablation bits in ablate.SPECS)

WITH_BITS = [name for name, spec in ablate.SPECS.items() if spec["ablations"]]


@pytest.mark.parametrize("kernel", WITH_BITS)
@pytest.mark.parametrize("variant", ["fix", "ablate"])
def test_variant_source_parses(kernel, variant):
    src = ablate.variant_source(kernel, variant)
    ast.parse(src)
    if variant == "ablate":
        for bit in ablate.SPECS[kernel]["ablations"]:
            assert f"if (ablate // {bit}) % 2 == 0:" in src


def test_block_leaving_its_indentation_is_refused():
    src = "def f():\n    for u in x:\n        a = 1\n        # end of loop\n    b = 2\n    return b\n"
    with pytest.raises(AssertionError, match="bit 1"):
        ablate.guard_all(src, {1: ("piece", "        a = 1", "    return b")})
    guarded = ablate.guard_all(src, {1: ("piece", "        a = 1", "        # end of loop")})
    ast.parse(guarded)
    assert "        if (ablate // 1) % 2 == 0:\n            a = 1\n" in guarded
