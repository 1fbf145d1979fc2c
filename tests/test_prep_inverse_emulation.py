"""scripts/prep_inverse_emulation.py: the chunk prep's off options for its inverse, emulated thread by thread in
float64, equal the default path's results (mma_level1: the level-1 merge on per-warp TF32 mma.sync, in the PTX
fragment layout; mma_level2: the level-2 merge the same way; diag8: the diagonal 16x16 blocks from 8x8 ones); a
fragment layout off by one swap, or a wrong index in the 8x8 merge, does not."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import prep_inverse_emulation as pie  # noqa: E402


def test_warp_merge_equals_the_fma_merge():
    for seed in range(3):
        assert pie.gap(pie.merge_by_warps, pie.merge_by_fma, seed) < 1e-12


def test_a_wrong_fragment_layout_is_caught(monkeypatch):
    """B's two registers taken as rows t + 4 and t (swapped): the emulated merge no longer matches."""
    original = pie.mma_m16n8k8

    def swapped(a_frags, b_frags, c_frags):
        return original(a_frags, [[b1, b0] for b0, b1 in b_frags], c_frags)

    monkeypatch.setattr(pie, "mma_m16n8k8", swapped)
    assert pie.gap(pie.merge_by_warps, pie.merge_by_fma) > 1e-3


def test_level2_warp_merge_equals_the_matrix_products():
    for seed in range(3):
        assert pie.gap(pie.merge2_by_warps, pie.merge2_by_gemm, seed) < 1e-12


def test_level2_with_a_wrong_fragment_layout_is_caught(monkeypatch):
    """A's second and third registers swapped (rows g + 8 and columns t + 4 exchanged): no longer the products."""
    original = pie.mma_m16n8k8

    def swapped(a_frags, b_frags, c_frags):
        return original([[a0, a2, a1, a3] for a0, a1, a2, a3 in a_frags], b_frags, c_frags)

    monkeypatch.setattr(pie, "mma_m16n8k8", swapped)
    assert pie.gap(pie.merge2_by_warps, pie.merge2_by_gemm) > 1e-3


def test_diag8_gives_the_inverse_of_each_16_block():
    for seed in range(3):
        assert pie.diag16_error(*pie.inputs(seed)) < 1e-12


def test_diag8_without_the_merge_is_caught(monkeypatch):
    """The 8x8 solves alone (the lower-left 8x8 of each 16-block left stale): far from the 16x16 inverses."""
    m_s, inv_s, b_s = pie.inputs(0)
    T = pie.t_matrix(m_s, b_s)
    out = pie.diag8_blocks(m_s, inv_s, b_s)
    out[8:16, 0:8] = inv_s[8:16, 0:8]
    assert np.abs(out[0:16, 0:16] - np.linalg.inv(T[0:16, 0:16])).max() > 1e-3
