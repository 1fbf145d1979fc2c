"""The 64-bit offset audit (scripts/index_audit.py, run by codegen at build time): the installed library's
kernels passed it, and the audit itself finds 32-bit arithmetic in a global index (on hand-made TIR)."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

import flashqla


def test_installed_kernels_have_64_bit_offsets():
    kernels = flashqla.build_manifest().get("kernels", [])
    assert kernels, "no build manifest"
    for k in kernels:
        report = k["index_audit"]
        assert report["global_accesses"] > 0, k["symbol"]
        assert report["violations"] == [], (k["symbol"], report["violations"])


def test_audit_finds_32_bit_index_arithmetic():
    tvm = pytest.importorskip("tilelang", reason="the audit itself needs TileLang (a build dependency)").tvm
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    from index_audit import audit

    tir = tvm.tirx
    n, i, t0 = tir.Var("n", "int32"), tir.Var("i", "int32"), tir.Var("t0", "int32")
    x = tir.decl_buffer((n * 128,), "float32", name="x", scope="global")
    s = tir.decl_buffer((128,), "float32", name="s", scope="shared")
    zero = tir.FloatImm("float32", 0.0)
    narrow = tir.BufferStore(x, zero, [i * 128 + 5])  # token * stride in int32: overflows past 2^31
    wide = tir.BufferStore(x, zero, [tir.Cast("int64", t0) * tir.IntImm("int64", 128)])
    on_chip = tir.BufferStore(s, zero, [i % 128 * 1])  # shared memory is not audited
    body = tir.For(i, 0, n, tir.ForKind.SERIAL, tir.SeqStmt([tir.Bind(t0, i * 64), narrow, wide, on_chip]))
    report = audit(types.SimpleNamespace(body=body))
    assert report["global_accesses"] == 2
    assert sorted(v.split("`")[1] for v in report["violations"]) == ["i * 128", "i * 128 + 5"]
    assert report["narrow_scalars"]["t0"] == ["i * 64"]
