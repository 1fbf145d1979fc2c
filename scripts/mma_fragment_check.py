#!/usr/bin/env python3
"""The chunk prep's level-1 merge on per-warp TF32 mma.sync (tilelang_src/sm90/chunk_prep.py, `mma_level1_merge`),
emulated lane by lane on the CPU: each lane's loads use the macro's index formulas (written out here the same way),
the m16n8k8 instruction is the PTX ISA's fragment layout (A: rows g, g + 8, columns t, t + 4; B: rows t, t + 4,
column g; C: rows g, g + 8, columns 2t, 2t + 1; g = lane / 4, t = lane % 4), and the result must equal the FMA
loops' merge in float64. A changed formula in the macro must be changed here too; this checks the derivation.

    python scripts/mma_fragment_check.py        # prints the largest difference, exit 1 above 1e-12
"""

from __future__ import annotations

import sys

import numpy as np

BT, ROW_PAD = 64, 4


def mma_m16n8k8(a_frags: list, b_frags: list, c_frags: list) -> list:
    """One warp's D = A B + C from its 32 lanes' fragments, back in the C layout."""
    A, B, C = np.zeros((16, 8)), np.zeros((8, 8)), np.zeros((16, 8))
    for lane in range(32):
        g, t = lane // 4, lane % 4
        A[g, t], A[g + 8, t], A[g, t + 4], A[g + 8, t + 4] = a_frags[lane]
        B[t, g], B[t + 4, g] = b_frags[lane]
        C[g, 2 * t], C[g, 2 * t + 1], C[g + 8, 2 * t], C[g + 8, 2 * t + 1] = c_frags[lane]
    D = A @ B + C
    return [[D[lane // 4, 2 * (lane % 4)], D[lane // 4, 2 * (lane % 4) + 1], D[lane // 4 + 8, 2 * (lane % 4)],
             D[lane // 4 + 8, 2 * (lane % 4) + 1]] for lane in range(32)]


def merge_by_warps(m_s: np.ndarray, inv_s: np.ndarray, b_s: np.ndarray) -> np.ndarray:
    """mma_level1_merge: four warps, each its 32-block p = w // 2 and columns c0 = 8 (w % 2) .. + 8; the block
    barriers TileLang puts between a phase's loads and its stores are kept (all loads of a phase, then its stores)."""
    inv_s = inv_s.copy()
    for phase in (1, 2):
        out = {}
        for w in range(4):
            p, c0 = w // 2, 8 * (w % 2)
            fc = [[0.0] * 4 for _ in range(32)]
            for ks in range(2):
                fa, fb = [], []
                for lane in range(32):
                    lg, lt = lane // 4, lane % 4
                    if phase == 1:
                        rows, col = (32 * p + 8 * ks + lt, 32 * p + 8 * ks + lt + 4), 32 * p + 16 + lg
                        fa.append([m_s[rows[0], col], m_s[rows[0], col + 8], m_s[rows[1], col], m_s[rows[1], col + 8]])
                        fb.append([inv_s[32 * p + 8 * ks + lt, 32 * p + c0 + lg],
                                   inv_s[32 * p + 8 * ks + lt + 4, 32 * p + c0 + lg]])
                    else:
                        row, cols = 32 * p + 16 + lg, (32 * p + 16 + 8 * ks + lt, 32 * p + 16 + 8 * ks + lt + 4)
                        fa.append([inv_s[row, cols[0]], inv_s[row + 8, cols[0]], inv_s[row, cols[1]],
                                   inv_s[row + 8, cols[1]]])
                        fb.append([inv_s[16 * p + 8 * ks + lt, 32 + c0 + lg],
                                   inv_s[16 * p + 8 * ks + lt + 4, 32 + c0 + lg]])
                fc = mma_m16n8k8(fa, fb, fc)
            out[w] = fc
        for w in range(4):
            p, c0 = w // 2, 8 * (w % 2)
            for lane in range(32):
                lg, lt = lane // 4, lane % 4
                for i in range(4):
                    r, c = lg + 8 * (i // 2), c0 + 2 * lt + i % 2
                    if phase == 1:
                        inv_s[16 * p + r, 32 + c] = b_s[32 * p + 16 + r] * out[w][lane][i]
                    else:
                        inv_s[32 * p + 16 + r, 32 * p + c] = -out[w][lane][i]
    return inv_s


def merge_by_fma(m_s: np.ndarray, inv_s: np.ndarray, b_s: np.ndarray) -> np.ndarray:
    """The FMA loops of the default path (chunk_prep.py, level 1 without tc_level1 / mma_level1)."""
    inv_s = inv_s.copy()
    for p in range(2):
        T_lo = m_s[32 * p:32 * p + 16, 32 * p + 16:32 * p + 32].T  # [r, j] = M[32p + j, 32p + 16 + r]
        Y = T_lo @ inv_s[32 * p:32 * p + 16, 32 * p:32 * p + 16]
        inv_s[16 * p:16 * p + 16, 32:48] = b_s[32 * p + 16:32 * p + 32, None] * Y
    for p in range(2):
        X = -inv_s[32 * p + 16:32 * p + 32, 32 * p + 16:32 * p + 32] @ inv_s[16 * p:16 * p + 16, 32:48]
        inv_s[32 * p + 16:32 * p + 32, 32 * p:32 * p + 16] = X
    return inv_s


def main() -> int:
    rng = np.random.default_rng(0)
    m_s, inv_s, b_s = (rng.standard_normal((BT, BT + ROW_PAD)), rng.standard_normal((BT, BT + ROW_PAD)),
                       rng.standard_normal(BT))
    err = float(np.abs(merge_by_warps(m_s, inv_s, b_s) - merge_by_fma(m_s, inv_s, b_s)).max())
    print(f"level-1 merge by warps against the FMA loops: max |difference| = {err:.3e}")
    return 0 if err < 1e-12 else 1


if __name__ == "__main__":
    sys.exit(main())
