"""benchmarks/warm_peers.py (CPU only): its jobs cover every shape of the benchmark once, grouped by head configuration,
with lengths the worker parses back to the same shapes; a worker calls each library once per shape and counts
failures; the parallel runner reports each worker's status and stops the ones past --timeout. And bench_gdn.py's
--skip-done: a run cut short goes on with exactly the shapes it had not measured."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_gdn  # noqa: E402
import shapes as bench_shapes  # noqa: E402
import warm_peers  # noqa: E402


def _shapes(mode, heads=None, mixes=None, published_bwd=False):
    return bench_gdn.shape_list(argparse.Namespace(mode=mode, heads=heads, mixes=mixes, published_bwd=published_bwd))


@pytest.mark.parametrize("mode", ["fwd", "bwd", "fwdbwd"])
def test_jobs_cover_every_shape_once_by_head_configuration(mode):
    shapes = _shapes(mode)
    jobs = warm_peers.plan_jobs(shapes)
    assert len({heads for heads, _ in jobs}) == len(jobs)  # one job per head configuration
    # the worker's own shape list, from its command line, gives back the same (heads, lengths)
    got = []
    for heads, mixes in jobs:
        cmd = warm_peers.worker_command(heads, mixes, mode, "flash_qla")
        worker_args = argparse.Namespace(mode=cmd[cmd.index("--mode") + 1], heads=[cmd[cmd.index("--heads") + 1]],
                                         mixes=cmd[cmd.index("--mixes") + 1:], published_bwd=False)
        got += [(s[2], s[3], tuple(s[4])) for s in bench_gdn.shape_list(worker_args)]
    assert sorted(got) == sorted((s[2], s[3], tuple(s[4])) for s in shapes)
    if mode == "fwd":
        assert len(jobs) == len(bench_shapes.HEAD_CONFIGS) and len(got) == 171


def test_worker_calls_each_library_once_per_shape_and_counts_failures(monkeypatch, capsys):
    calls = []

    def fake_lib(fail_on=None):
        def make(x, mode):
            def fn():
                calls.append((x["T"], mode))
                if x["T"] == fail_on:
                    raise RuntimeError("boom")
            return fn
        return "0", make

    monkeypatch.setattr(bench_gdn, "make_inputs", lambda lengths, hqk, hv: {"T": sum(lengths)})
    monkeypatch.setitem(bench_gdn.LIBRARIES, "fake", lambda: fake_lib())
    args = argparse.Namespace(mode="fwd", heads=["2,8"], mixes=["8192", "4096,4096", "100,200"], published_bwd=False,
                              libs="fake,absent_lib")
    monkeypatch.setitem(bench_gdn.LIBRARIES, "absent_lib", lambda: (_ for _ in ()).throw(ImportError("no")))
    assert warm_peers.run_worker(args) == 0
    assert calls == [(8192, "fwd"), (8192, "fwd"), (300, "fwd")]
    assert "absent_lib: not available" in capsys.readouterr().out
    calls.clear()
    monkeypatch.setitem(bench_gdn.LIBRARIES, "fake", lambda: fake_lib(fail_on=300))
    assert warm_peers.run_worker(args) == 1 and len(calls) == 3
    assert "100,200 fake failed: RuntimeError: boom" in capsys.readouterr().out


def test_parallel_runner_reports_status_and_stops_late_workers(monkeypatch, capsys, tmp_path):
    scripts = {(1, 1): "pass", (2, 2): "raise SystemExit(3)", (3, 3): "import time; time.sleep(60)"}
    monkeypatch.setattr(warm_peers, "worker_command",
                        lambda heads, mixes, mode, libs: [sys.executable, "-c", scripts[heads]])
    args = argparse.Namespace(jobs=2, timeout=3, log_dir=str(tmp_path), mode="fwd", libs="x")
    rc = warm_peers.run_parallel([((1, 1), ["1"]), ((2, 2), ["1"]), ((3, 3), ["1"])], args)
    out = capsys.readouterr().out
    assert rc == 1
    assert "(1,1): rc 0" in out and "(2,2): rc 3" in out and "(3,3): stopped at --timeout" in out
    assert "3 head configurations" in out and "2 not done cleanly" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["warm_1_1.log", "warm_2_2.log", "warm_3_3.log"]


def _run(mode, rows):
    return {"info": {}, "mode": mode, "rows": [{"seqlens": m, "h_qk": a, "h_v": b, "ms": ms} for m, a, b, ms in rows]}


def test_skip_done_leaves_out_exactly_the_measured_shapes():
    shapes = _shapes("fwd", heads=["16,64", "32,32"])
    runs = [_run("fwd", [("1x32768", 16, 64, {"flashqla": 1.0}), ("8192x4", 16, 64, {"flashqla": 1.0}),
                         ("1x2048", 32, 32, {"fla": 1.0})]),  # (flashqla failed there: measured again)
            _run("fwd", [("1024x8", 32, 32, {"flashqla": 1.0, "fla": 2.0})])]
    left = bench_gdn.drop_done(shapes, runs, "fwd")
    gone = {(s[1], s[2], s[3]) for s in shapes} - {(s[1], s[2], s[3]) for s in left}
    assert gone == {("1x32768", 16, 64), ("8192x4", 16, 64), ("1024x8", 32, 32)}
    assert len(left) == 38 - 3
    assert bench_gdn.drop_done(shapes, [], "fwd") == shapes
    with pytest.raises(ValueError, match="bwd run given to a fwd run"):
        bench_gdn.drop_done(shapes, [_run("bwd", [])], "fwd")


def test_worker_inputs_are_the_benchmarks(monkeypatch):
    """The worker builds its inputs with bench_gdn.make_inputs (the benchmark's dtypes and shapes: the specializations
    the peers compile depend on them), once per shape; a library that has nothing to run in a mode is skipped."""
    seen = []
    monkeypatch.setattr(bench_gdn, "make_inputs", lambda lengths, hqk, hv: seen.append((lengths, hqk, hv)) or {})
    monkeypatch.setitem(bench_gdn.LIBRARIES, "fake", lambda: ("0", lambda x, mode: None))
    args = argparse.Namespace(mode="bwd", heads=["4,8"], mixes=["2048,2048"], published_bwd=False, libs="fake")
    assert warm_peers.run_worker(args) == 0
    assert seen == [([2048, 2048], 4, 8)]
