#!/usr/bin/env python3
"""The chunk prep's off options for its blockwise inverse (tilelang_src/sm90/chunk_prep.py; the macros live in
tilelang_src/common/unit_lower_inverse.py), emulated thread by thread on the CPU in float64 against the default path's
results: each thread's loads and stores use the kernel macro's index formulas (written out here the same way), so a
changed formula in the kernel must be changed here too; this checks the derivation and the indexing, not TileLang's
lowering.

- `mma_level1` (macro mma_level1_merge): the level-1 merge on per-warp TF32 mma.sync m16n8k8, the instruction in the
  PTX ISA's fragment layout (A: rows g, g + 8, columns t, t + 4; B: rows t, t + 4, column g; C: rows g, g + 8,
  columns 2t, 2t + 1; g = lane / 4, t = lane % 4), against the FMA loops' merge.
- `mma_level2` (macro mma_level2_merge): the level-2 merge on the same instruction, each warp 8 columns of both
  32x32x32 products in two 16-row tiles, against the matrix products of the default path (tc_level2's GEMMs).
- `diag8` (macro diag8_blocks): the diagonal 16x16 blocks of the inverse from 8x8 solves and an 8x8 merge per
  16-block, against the inverses of T's diagonal 16x16 blocks.

    python scripts/prep_inverse_emulation.py     # prints the largest differences, exit 1 above 1e-12
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


def merge2_by_warps(m_s: np.ndarray, inv_s: np.ndarray, b_s: np.ndarray) -> np.ndarray:
    """mma_level2_merge: warp w takes columns c0 = 8 w .. + 8 of both products, rows in tiles mt = 0, 1 (16 each),
    four k-steps of 8; all loads of a phase before its stores (the block barriers TileLang puts)."""
    inv_s = inv_s.copy()
    for phase in (1, 2):
        out = {}
        for w in range(4):
            c0 = 8 * w
            fc = {mt: [[0.0] * 4 for _ in range(32)] for mt in range(2)}
            for ks in range(4):
                fb = []
                for lane in range(32):
                    lg, lt = lane // 4, lane % 4
                    col = c0 + lg if phase == 1 else 32 + c0 + lg
                    fb.append([inv_s[8 * ks + lt, col], inv_s[8 * ks + lt + 4, col]])
                for mt in range(2):
                    fa = []
                    for lane in range(32):
                        lg, lt = lane // 4, lane % 4
                        if phase == 1:
                            rows, col = (8 * ks + lt, 8 * ks + lt + 4), 32 + 16 * mt + lg
                            fa.append([m_s[rows[0], col], m_s[rows[0], col + 8], m_s[rows[1], col],
                                       m_s[rows[1], col + 8]])
                        else:
                            row, cols = 32 + 16 * mt + lg, (32 + 8 * ks + lt, 32 + 8 * ks + lt + 4)
                            fa.append([inv_s[row, cols[0]], inv_s[row + 8, cols[0]], inv_s[row, cols[1]],
                                       inv_s[row + 8, cols[1]]])
                    fc[mt] = mma_m16n8k8(fa, fb, fc[mt])
            out[w] = fc
        for w in range(4):
            c0 = 8 * w
            for mt in range(2):
                for lane in range(32):
                    lg, lt = lane // 4, lane % 4
                    for i in range(4):
                        r, c = 16 * mt + lg + 8 * (i // 2), c0 + 2 * lt + i % 2
                        if phase == 1:
                            inv_s[r, 32 + c] = b_s[32 + r] * out[w][mt][lane][i]
                        else:
                            inv_s[32 + r, c] = -out[w][mt][lane][i]
    return inv_s


def merge2_by_gemm(m_s: np.ndarray, inv_s: np.ndarray, b_s: np.ndarray) -> np.ndarray:
    """The default path's level-2 merge (tc_level2's two GEMMs, here in float64)."""
    inv_s = inv_s.copy()
    Y = m_s[0:32, 32:64].T @ inv_s[0:32, 0:32]  # [r, c] = sum_j M[j, 32 + r] inv[j, c]
    inv_s[0:32, 32:64] = b_s[32:64, None] * Y
    inv_s[32:64, 0:32] = -inv_s[32:64, 32:64] @ inv_s[0:32, 32:64]
    return inv_s


def t_matrix(m_s: np.ndarray, b_s: np.ndarray) -> np.ndarray:
    """T = I + L with L[m, j] = beta_m M[j, m] for m > j (the prep reads T from M, never forms it)."""
    T = np.eye(BT)
    for m in range(BT):
        for j in range(m):
            T[m, j] = b_s[m] * m_s[j, m]
    return T


def diag8_blocks(m_s: np.ndarray, inv_s: np.ndarray, b_s: np.ndarray) -> np.ndarray:
    """diag8_blocks: all 128 threads zero the upper-right 8x8 of the 16-blocks, threads tx < 64 solve 8x8 block
    e = tx // 8's column tx % 8; then (after a block barrier) warp bw merges 16-block bw through the scratch
    inv[8 bw + r, 32 + c]."""
    inv_s = inv_s.copy()
    for tx in range(128):
        for cc in range(2):
            inv_s[16 * (tx // 32) + (tx % 32) // 4, 16 * (tx // 32) + 8 + 2 * (tx % 4) + cc] = 0.0
    for tx in range(64):
        e, c = tx // 8, tx % 8
        col = [1.0 if m == c else 0.0 for m in range(8)]
        for m in range(1, 8):
            for j in range(m):
                col[m] -= (b_s[8 * e + m] * m_s[8 * e + j, 8 * e + m]) * col[j]
        for m in range(8):
            inv_s[8 * e + m, tx] = col[m]
    y = {}
    for tx in range(128):  # every thread's loads of the first product before any store (the barrier TileLang puts)
        bw, r, c = tx // 32, (tx % 32) // 4, 2 * (tx % 4)
        y0 = y1 = 0.0
        for j in range(8):
            t21 = b_s[16 * bw + 8 + r] * m_s[16 * bw + j, 16 * bw + 8 + r]
            y0 += t21 * inv_s[16 * bw + j, 16 * bw + c]
            y1 += t21 * inv_s[16 * bw + j, 16 * bw + c + 1]
        y[tx] = (y0, y1)
    for tx in range(128):
        bw, r, c = tx // 32, (tx % 32) // 4, 2 * (tx % 4)
        inv_s[8 * bw + r, 32 + c], inv_s[8 * bw + r, 32 + c + 1] = y[tx]
    x = {}
    for tx in range(128):
        bw, r, c = tx // 32, (tx % 32) // 4, 2 * (tx % 4)
        x0 = x1 = 0.0
        for j in range(8):
            d2 = inv_s[16 * bw + 8 + r, 16 * bw + 8 + j]
            x0 -= d2 * inv_s[8 * bw + j, 32 + c]
            x1 -= d2 * inv_s[8 * bw + j, 32 + c + 1]
        x[tx] = (x0, x1)
    for tx in range(128):
        bw, r, c = tx // 32, (tx % 32) // 4, 2 * (tx % 4)
        inv_s[16 * bw + 8 + r, 16 * bw + c], inv_s[16 * bw + 8 + r, 16 * bw + c + 1] = x[tx]
    return inv_s


def diag16_error(m_s: np.ndarray, inv_s: np.ndarray, b_s: np.ndarray) -> float:
    """The largest difference between diag8_blocks' 16x16 diagonal blocks and the inverses of T's."""
    T, out = t_matrix(m_s, b_s), diag8_blocks(m_s, inv_s, b_s)
    return max(float(np.abs(out[16 * b:16 * b + 16, 16 * b:16 * b + 16]
                            - np.linalg.inv(T[16 * b:16 * b + 16, 16 * b:16 * b + 16])).max()) for b in range(4))


def inputs(seed: int) -> tuple:
    """M, a stale inverse buffer and beta of the shapes the kernel uses (M scaled as K K^T of l2-normalized keys is)."""
    rng = np.random.default_rng(seed)
    shape = (BT, BT + ROW_PAD)
    return 0.3 * rng.standard_normal(shape), rng.standard_normal(shape), rng.uniform(0.0, 1.0, BT)


def gap(by_warps, reference, seed: int = 0) -> float:
    """The largest difference between a merge by warps and its reference path, on inputs(seed)."""
    m_s, inv_s, b_s = inputs(seed)
    return float(np.abs(by_warps(m_s, inv_s, b_s) - reference(m_s, inv_s, b_s)).max())


def main() -> int:
    err1 = gap(merge_by_warps, merge_by_fma)
    print(f"mma_level1: level-1 merge by warps against the FMA loops: max |difference| = {err1:.3e}")
    err2 = diag16_error(*inputs(0))
    print(f"diag8: 16x16 diagonal blocks from 8x8 ones against inv(T's blocks): max |difference| = {err2:.3e}")
    err3 = gap(merge2_by_warps, merge2_by_gemm)
    print(f"mma_level2: level-2 merge by warps against the matrix products: max |difference| = {err3:.3e}")
    return 0 if max(err1, err2, err3) < 1e-12 else 1


if __name__ == "__main__":
    sys.exit(main())
