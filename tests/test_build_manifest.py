"""The installed library says which commit its kernels were generated from (scripts/codegen.py writes it
into the build manifest; benchmarks/bench_gdn.py records it next to its numbers, `python -m flashqla --info`
prints it). A CPU test."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import flashqla
from source_variants import load_variants


def test_manifest_names_the_source_commit():
    man = flashqla.build_manifest()
    assert "source_commit" in man, "the build manifest has no source_commit (a wheel from before this field?)"
    commit = man["source_commit"]
    if commit is None:
        pytest.skip("built outside a git checkout (an sdist): no commit to record")
    assert re.fullmatch(r"[0-9a-f]{7,40}(\+dirty)?", commit), commit


def test_info_prints_the_source_commit():
    run = subprocess.run([sys.executable, "-m", "flashqla", "--info"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    commit = flashqla.build_manifest().get("source_commit") or "unknown"
    assert f"source commit {commit}" in run.stdout, run.stdout


def _checkout_head() -> str | None:
    """This checkout's commit (short), or None outside a git checkout."""
    root = Path(__file__).resolve().parent.parent
    run = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=root)
    return run.stdout.strip() if run.returncode == 0 else None


def test_manifest_records_each_kernels_options():
    """Every kernel's options (variants.py's parameters of its program) are in the manifest, so that an A/B wheel
    built with options on (scripts/device_calls/build_option_wheel.sh) says so; a wheel built from this checkout's
    commit, unmodified, has exactly variants.py's options."""
    man = flashqla.build_manifest()
    kernels = man["kernels"]
    if all("options" not in k for k in kernels):
        pytest.skip("a wheel from before the manifest recorded the kernels' options")
    assert all(isinstance(k.get("options"), dict) for k in kernels), [k["symbol"] for k in kernels if "options" not in k]
    commit = man.get("source_commit")
    head = _checkout_head()
    variants = load_variants()
    if not commit or commit.endswith("+dirty") or not head or not commit.startswith(head[:7]) or variants is None:
        pytest.skip(f"the wheel (commit {commit}) is not this checkout's commit ({head}) unmodified")
    want = {v.symbol: json.loads(json.dumps(v.params)) for v in variants.VARIANTS}
    for k in kernels:
        assert k["symbol"] in want, f"{k['symbol']}: not a variant of this checkout"
        assert k["options"] == want[k["symbol"]], f"{k['symbol']}: {k['options']} != {want[k['symbol']]}"
