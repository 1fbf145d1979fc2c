"""The installed library says which commit its kernels were generated from (scripts/codegen.py writes it
into the build manifest; benchmarks/bench_gdn.py records it next to its numbers, `python -m flashqla --info`
prints it). A CPU test."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

import flashqla


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
