"""scripts/mma_fragment_check.py: the chunk prep's per-warp TF32 level-1 merge (option mma_level1), emulated lane by
lane in the PTX fragment layout, equals the FMA merge in float64; a fragment layout off by one swap does not."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import mma_fragment_check as mfc  # noqa: E402


def _inputs(seed: int):
    rng = np.random.default_rng(seed)
    shape = (mfc.BT, mfc.BT + mfc.ROW_PAD)
    return rng.standard_normal(shape), rng.standard_normal(shape), rng.standard_normal(mfc.BT)


def test_warp_merge_equals_the_fma_merge():
    for seed in range(3):
        m_s, inv_s, b_s = _inputs(seed)
        assert np.abs(mfc.merge_by_warps(m_s, inv_s, b_s) - mfc.merge_by_fma(m_s, inv_s, b_s)).max() < 1e-12


def test_a_wrong_fragment_layout_is_caught(monkeypatch):
    """B's two registers taken as rows t + 4 and t (swapped): the emulated merge no longer matches."""
    original = mfc.mma_m16n8k8

    def swapped(a_frags, b_frags, c_frags):
        return original(a_frags, [[b1, b0] for b0, b1 in b_frags], c_frags)

    monkeypatch.setattr(mfc, "mma_m16n8k8", swapped)
    m_s, inv_s, b_s = _inputs(0)
    assert np.abs(mfc.merge_by_warps(m_s, inv_s, b_s) - mfc.merge_by_fma(m_s, inv_s, b_s)).max() > 1e-3
