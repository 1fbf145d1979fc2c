"""benchmarks/bench_gdn.py's shape selection and its markdown's published-context section (CPU only): the
backward table of issue 5 is the published one (4 head configurations x 8k / 32k tokens in 1, 2, 4, 8
sequences), selectable per head configuration; the context section appears only when rows match it; FlashInfer's
published (H200) times count in `x best peer` only on an H200."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_gdn  # noqa: E402


def shapes(mode, heads=None, published_bwd=False, mixes=None):
    return bench_gdn.shape_list(argparse.Namespace(mode=mode, heads=heads, published_bwd=published_bwd, mixes=mixes))


def test_backward_default_is_the_published_table():
    got = shapes("bwd")
    assert len(got) == 32 and {(s[2], s[3]) for s in got} == {(16, 32), (8, 16), (4, 8), (2, 4)}
    for _, name, _, _, lengths in got:
        total, n = name.split("_")
        assert sum(lengths) == {"8k": 8192, "32k": 32768}[total] and len(lengths) == int(n.rstrip("seq"))
    assert {(s[1], s[2], s[3]) for s in got} == set(bench_gdn.published_bwd())


def test_published_backward_per_head_configuration():
    got = shapes("bwd", heads=["16,32", "2,4"], published_bwd=True)
    assert len(got) == 16 and {(s[2], s[3]) for s in got} == {(16, 32), (2, 4)}
    assert len(shapes("bwd", heads=["16,32"])) == 19  # without the flag: the forward's length mixes


def _row(seqlens, hqk, hv, ms):
    return {"model": "m", "seqlens": seqlens, "h_qk": hqk, "h_v": hv, "ms": {"flashqla": ms},
            "graph": {"flashqla": True}, "floor_ms": 0.1}


def test_context_section_only_with_matching_rows():
    info = {"gpu": "X"}
    matching = bench_gdn.markdown(info, "bwd", [_row("8k_1seq", 16, 32, 0.5)], ["flashqla"])
    assert "Context, not a same-run comparison" in matching and "| m | 8k_1seq | (16, 32) | 0.500 |" in matching
    other = bench_gdn.markdown(info, "bwd", [_row("1x8192", 16, 32, 0.5)], ["flashqla"])
    assert "Context, not a same-run comparison" not in other


def _run(commit, mode, seqlens, ms, command="python benchmarks/bench_gdn.py"):
    return {"info": {"gpu": "NVIDIA H200", "commit": commit, "command": command, "date": "2026-11-30"},
            "mode": mode, "rows": [_row(seqlens, 16, 32, ms)]}


def test_runs_of_one_commit_render_as_one_table():
    info, mode, rows = bench_gdn.merge_runs([_run("abc", "bwd", "8k_1seq", 1.0, "cmd one"),
                                             _run("abc", "bwd", "32k_1seq", 2.0, "cmd two")])
    assert mode == "bwd" and [r["seqlens"] for r in rows] == ["8k_1seq", "32k_1seq"]
    assert info["command"] == "(1) cmd one ; (2) cmd two" and info["commit"] == "abc"
    md = bench_gdn.markdown(info, mode, rows, ["flashqla"])
    assert "8k_1seq" in md and "32k_1seq" in md and "cmd two" in md


def test_runs_of_different_commits_or_modes_are_refused():
    import pytest

    with pytest.raises(ValueError, match="commit"):
        bench_gdn.merge_runs([_run("abc", "bwd", "8k_1seq", 1.0), _run("def", "bwd", "8k_2seq", 1.0)])
    with pytest.raises(ValueError, match="modes"):
        bench_gdn.merge_runs([_run("abc", "bwd", "8k_1seq", 1.0), _run("abc", "fwd", "8k_2seq", 1.0)])


def test_published_flashinfer_compared_only_on_an_h200():
    """FlashInfer's published times are an H200's: `x best peer` compares with them there, only shows them elsewhere
    (and the markdown says so)."""
    ms = {"flashqla": 1.0, "fla": 2.0, "flash_qla": 1.2, "flashinfer_pub": 0.8, "flashqla_keep": 0.9}
    assert bench_gdn.compared_peers(ms, "NVIDIA H200") == {"fla": 2.0, "flash_qla": 1.2, "flashinfer_pub": 0.8}
    assert bench_gdn.compared_peers(ms, "NVIDIA H100 80GB HBM3") == {"fla": 2.0, "flash_qla": 1.2}
    row = {**_row("1x8192", 32, 32, 1.0), "ms": {"flashqla": 1.0, "flashinfer_pub": 0.8},
           "graph": {"flashqla": True, "flashinfer_pub": True}}
    libs = ["flashqla", "flashinfer_pub"]
    assert "this GPU is not an H200" in bench_gdn.markdown({"gpu": "NVIDIA H100 80GB HBM3"}, "fwd", [row], libs)
    assert "this GPU is not an H200" not in bench_gdn.markdown({"gpu": "NVIDIA H200"}, "fwd", [row], libs)
