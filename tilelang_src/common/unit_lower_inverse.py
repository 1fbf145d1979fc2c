"""The 64 x 64 unit-lower-triangular inverse (I + L)^-1, L = strictLower(diag(beta) K K^T), by exact blockwise
forward substitution on one 128-thread warpgroup (docs/gdn_chunk_derivation.md, "Ungated inverse"), as macros over
shared memory: M (m_s, fp32, K K^T strictly above its diagonal: T[m, j] = beta_m M[j, m] for m > j), the inverse
(inv_s, fp32, on and below its diagonal), the merges' scratch (ys[0:32, y0:y0 + 32]: inv_s's own upper block
[0:32, 32:64] with y0 = 32, or a buffer of its own with y0 = 0, so that TileLang's sync planner sees no write after
read of inv_s between the steps) and beta (b_s). The steps: the
four 16 x 16 diagonal blocks (16 threads per block, one column each, in registers, or from 8 x 8 blocks), the
level-1 merge X = -D_hi T_lo D_lo of the 16-blocks (1, 0) and (3, 2), the level-2 merge of the 32-block (1, 0); the
merges' products as TF32 mma.sync per warp or as T.gemm. The chunk prep (sm90/chunk_prep.py) picks them by its
options; a kernel that forms the inverse beside other work calls the same macros. With `shfl` (trace time) the 8x8
step and the mma merges keep their intermediate Y in registers and move it between a warp's lanes by shuffles (their
warps only ever read back their own Y): the same products, without the scratch's round trip through shared memory and
the warpgroup syncs that TileLang places around it (the lane arithmetic: tests/test_solve_shfl_lanes.py)."""

import tilelang.language as T


class RingStage:
    """beta as the macros index it (b_s[row]) from one stage of a ring buffer [stages, BT]: b[row] is
    ring[stage, row]"""

    def __init__(self, ring, stage):
        self.ring = ring
        self.stage = stage

    def __getitem__(self, row):
        return self.ring[self.stage, row]


@T.macro
def solve_diag_column(m_s, inv_s, b_s, col, tx, n, eye=False):
    """Thread tx solves column tx % n of the n x n diagonal block e = tx // n of T, T[m, j] = beta_m M[j, m]
    (m > j), row by row in registers (col[0:n]), and writes it to inv[n e : n e + n, tx]. The column starts as the
    identity's; with `eye` (trace time) it is read from inv_s, where the caller wrote the identity's block before its
    last sync: formed from tx in a loop, ptxas hoisted the eight 0/1 values out of it and, in a warpgroup short of
    registers, spilled them and reloaded them from local memory on the solve's chain every chunk (33rd session,
    Nsight Compute of gdn_fwd_noprep: a third of the solve's samples)."""
    for m in T.unroll(n):
        if eye:
            col[m] = inv_s[n * (tx // n) + m, tx]
        else:
            col[m] = T.if_then_else(m == tx % n, 1.0, 0.0)
    for m in T.unroll(1, n):
        for j in T.unroll(m):
            col[m] -= (b_s[n * (tx // n) + m] * m_s[n * (tx // n) + j, n * (tx // n) + m]) * col[j]
    for m in T.unroll(n):
        inv_s[n * (tx // n) + m, tx] = col[m]


@T.macro
def shfl_b_fragments(fc, fy, nks, lg, lt):
    """fy[2 ks + h] <- Y[8 ks + lt + 4 h, lg] for ks < nks, h < 2: the B fragments of a product over Y's rows from the
    m16n8k8 accumulators that hold Y in this warp (fc[2 ks + e] = Y[8 ks + lg, 2 lt + e], tiles of 16 rows stacked):
    Y[row, col] is lane 4 (row % 8) + col / 2's element 2 (row // 8) + col % 2."""
    for ks in T.unroll(nks):
        for h in T.unroll(2):
            y_even = T.shfl_sync(fc[2 * ks], 4 * (lt + 4 * h) + lg // 2)
            y_odd = T.shfl_sync(fc[2 * ks + 1], 4 * (lt + 4 * h) + lg // 2)
            fy[2 * ks + h] = T.if_then_else(lg % 2 == 1, y_odd, y_even)


@T.macro
def mma_level1_merge(m_s, inv_s, b_s, fa, fb, fc, tx, ys, y0, fy=None, shfl=False, g_out=None, g_st=0):
    """The level-1 merge by warps: warp w = tx // 32 takes 32-block p = w // 2 and columns 8 h .. 8 h + 8
    (h = w % 2) of both products. Y = T_lo D_lo (T_lo[r, j] = M[32p + j, 32p + 16 + r], D_lo = inv[32p:+16, 32p:+16]),
    scaled by beta's rows into the scratch ys[16p + r, y0 + c]; then -D_hi Y into the inverse's block
    inv[32p + 16 + r, 32p + c]. A warp reads back only the scratch columns it wrote. With shfl, Y stays in the
    accumulators fc[i] (Y[lg + 8 (i // 2), 2 lt + i % 2]) and the second product's B fragments (Y[8 ks + lt, lg],
    Y[8 ks + lt + 4, lg]) come from them by shuffles into fy (4 fp32 locals): Y[row, col] is lane
    4 (row % 8) + col / 2's fc[2 (row // 8) + col % 2]."""
    w = tx // 32
    lg = (tx % 32) // 4
    lt = tx % 4
    p = w // 2
    c0 = 8 * (w % 2)
    for i in T.unroll(4):
        fc[i] = 0.0
    for ks in T.unroll(2):
        fa[0] = m_s[32 * p + 8 * ks + lt, 32 * p + 16 + lg]
        fa[1] = m_s[32 * p + 8 * ks + lt, 32 * p + 16 + lg + 8]
        fa[2] = m_s[32 * p + 8 * ks + lt + 4, 32 * p + 16 + lg]
        fa[3] = m_s[32 * p + 8 * ks + lt + 4, 32 * p + 16 + lg + 8]
        fb[0] = inv_s[32 * p + 8 * ks + lt, 32 * p + c0 + lg]
        fb[1] = inv_s[32 * p + 8 * ks + lt + 4, 32 * p + c0 + lg]
        T.ptx_mma("float32", "m16n8k8", "row", "col", "tf32", "tf32", "fp32", fa.data, 0, fb.data, 0, fc.data, 0,
                  T.bool(False))
    if shfl:
        for i in T.unroll(4):
            fc[i] = b_s[32 * p + 16 + lg + 8 * (i // 2)] * fc[i]
        shfl_b_fragments(fc, fy, 2, lg, lt)
    else:
        for i in T.unroll(4):
            ys[16 * p + lg + 8 * (i // 2), y0 + c0 + 2 * lt + i % 2] = (
                b_s[32 * p + 16 + lg + 8 * (i // 2)] * fc[i])
    for i in T.unroll(4):
        fc[i] = 0.0
    for ks in T.unroll(2):
        fa[0] = inv_s[32 * p + 16 + lg, 32 * p + 16 + 8 * ks + lt]
        fa[1] = inv_s[32 * p + 16 + lg + 8, 32 * p + 16 + 8 * ks + lt]
        fa[2] = inv_s[32 * p + 16 + lg, 32 * p + 16 + 8 * ks + lt + 4]
        fa[3] = inv_s[32 * p + 16 + lg + 8, 32 * p + 16 + 8 * ks + lt + 4]
        if shfl:
            fb[0] = fy[2 * ks]
            fb[1] = fy[2 * ks + 1]
        else:
            fb[0] = ys[16 * p + 8 * ks + lt, y0 + c0 + lg]
            fb[1] = ys[16 * p + 8 * ks + lt + 4, y0 + c0 + lg]
        T.ptx_mma("float32", "m16n8k8", "row", "col", "tf32", "tf32", "fp32", fa.data, 0, fb.data, 0, fc.data, 0,
                  T.bool(False))
    for i in T.unroll(4):
        inv_s[32 * p + 16 + lg + 8 * (i // 2), 32 * p + c0 + 2 * lt + i % 2] = -fc[i]
        if g_out is not None:
            g_out[g_st, 32 * p + 16 + lg + 8 * (i // 2), 32 * p + c0 + 2 * lt + i % 2] = T.cast(
                -fc[i] * b_s[32 * p + c0 + 2 * lt + i % 2], g_out.dtype)


@T.macro
def mma_level2_merge(m_s, inv_s, b_s, fa, fb, fc, tx, ys, y0, fy=None, shfl=False, g_out=None, g_st=0):
    """The level-2 merge by warps: warp w = tx // 32 takes columns c0 = 8 w .. c0 + 8 of both 32x32x32 products,
    rows in two 16-row tiles (fa[4 t:4 t + 4] and fc[4 t:4 t + 4] are tile t's fragments). Y = T_lo D_lo
    (T_lo[r, j] = M[j, 32 + r], D_lo = inv[0:32, 0:32]) scaled by beta's rows into the scratch ys[r, y0 + c]; then
    -D_hi Y (D_hi = inv[32:64, 32:64]) into the inverse's block inv[32 + r, c]. A warp reads back only the columns its
    first product formed: with shfl its B fragments come from the accumulators by shuffles into fy (8 fp32 locals),
    as in mma_level1_merge."""
    w = tx // 32
    lg = (tx % 32) // 4
    lt = tx % 4
    c0 = 8 * w
    for i in T.unroll(8):
        fc[i] = 0.0
    for ks in T.unroll(4):
        for mt in T.unroll(2):
            fa[4 * mt + 0] = m_s[8 * ks + lt, 32 + 16 * mt + lg]
            fa[4 * mt + 1] = m_s[8 * ks + lt, 32 + 16 * mt + lg + 8]
            fa[4 * mt + 2] = m_s[8 * ks + lt + 4, 32 + 16 * mt + lg]
            fa[4 * mt + 3] = m_s[8 * ks + lt + 4, 32 + 16 * mt + lg + 8]
        fb[0] = inv_s[8 * ks + lt, c0 + lg]
        fb[1] = inv_s[8 * ks + lt + 4, c0 + lg]
        for mt in T.unroll(2):
            T.ptx_mma("float32", "m16n8k8", "row", "col", "tf32", "tf32", "fp32", fa.data, 4 * mt, fb.data, 0,
                      fc.data, 4 * mt, T.bool(False))
    if shfl:
        for i in T.unroll(8):
            fc[i] = b_s[32 + 16 * (i // 4) + lg + 8 * ((i % 4) // 2)] * fc[i]
        shfl_b_fragments(fc, fy, 4, lg, lt)
    else:
        for mt in T.unroll(2):
            for i in T.unroll(4):
                ys[16 * mt + lg + 8 * (i // 2), y0 + c0 + 2 * lt + i % 2] = (
                    b_s[32 + 16 * mt + lg + 8 * (i // 2)] * fc[4 * mt + i])
    for i in T.unroll(8):
        fc[i] = 0.0
    for ks in T.unroll(4):
        for mt in T.unroll(2):
            fa[4 * mt + 0] = inv_s[32 + 16 * mt + lg, 32 + 8 * ks + lt]
            fa[4 * mt + 1] = inv_s[32 + 16 * mt + lg + 8, 32 + 8 * ks + lt]
            fa[4 * mt + 2] = inv_s[32 + 16 * mt + lg, 32 + 8 * ks + lt + 4]
            fa[4 * mt + 3] = inv_s[32 + 16 * mt + lg + 8, 32 + 8 * ks + lt + 4]
        if shfl:
            fb[0] = fy[2 * ks]
            fb[1] = fy[2 * ks + 1]
        else:
            fb[0] = ys[8 * ks + lt, y0 + c0 + lg]
            fb[1] = ys[8 * ks + lt + 4, y0 + c0 + lg]
        for mt in T.unroll(2):
            T.ptx_mma("float32", "m16n8k8", "row", "col", "tf32", "tf32", "fp32", fa.data, 4 * mt, fb.data, 0,
                      fc.data, 4 * mt, T.bool(False))
    for mt in T.unroll(2):
        for i in T.unroll(4):
            inv_s[32 + 16 * mt + lg + 8 * (i // 2), c0 + 2 * lt + i % 2] = -fc[4 * mt + i]
            if g_out is not None:
                g_out[g_st, 32 + 16 * mt + lg + 8 * (i // 2), c0 + 2 * lt + i % 2] = T.cast(
                    -fc[4 * mt + i] * b_s[c0 + 2 * lt + i % 2], g_out.dtype)


@T.macro
def diag8_blocks(m_s, inv_s, b_s, col, yv, tx, ys, y0, shfl=False, eye=False, zeros=True, g_out=None, g_st=0):
    """inv[16b:+16, 16b:+16] <- T_bb^-1 for the four 16-blocks b, T[m, j] = beta_m M[j, m] (m > j), from 8x8
    blocks: T_bb^-1 = [[D1, 0], [-D2 T21 D1, D2]]. Thread 8 e + c (< 64) solves 8x8 block e's column c; then warp b
    forms block b's Y = T21 D1 (rows r = lane / 4, columns 2 (lane % 4) + 0, 1) into the scratch ys[8b + r, y0 + c]
    and X = -D2 Y into inv[16b + 8 + r, 16b + c].

    The upper-right 8x8 zeros of each 16-block (the level-1 merge reads whole 16x16 blocks; `zeros`: unless the caller
    wrote them once, as nothing else writes there with shfl and Y in registers in the merges) are written by all 128
    threads ahead of the solve, not by the solving threads after it: there TileLang put a 64-thread named barrier
    (bar.sync 3, 64) between the two, and compute-sanitizer's racecheck then reported RAW hazards on the A tile's
    element stores far below it (a4393e2; barrier 0 is uniform in the loop: whether racecheck lost count or the race
    was real is not settled, so the pattern is avoided).

    With shfl, Y stays in registers and X's loop takes Y's rows from the warp's lanes by shuffles (Y[j, c] is lane
    4 j + c / 2's): yv then holds 4 fp32 locals, and ys, y0 are not read. With eye, the same 128 threads also write
    the identity into the eight 8x8 diagonal blocks (thread tx: block tx // 16, row (tx % 16) // 2, columns
    4 (tx % 2) .. + 4), from which the solving threads read their columns' start (solve_diag_column's `eye`).
    With g_out (and shfl), each warp also writes its 16-block's blocks of G = inv * beta_col, g_out[g_st] (bf16): the
    two diagonal 8x8 blocks from the solves and X (written by the solving threads instead, G's stores put a 64-thread
    sync into the solve)"""
    if zeros:  # (without: the caller wrote them once, and nothing else writes there)
        for cc in T.unroll(2):  # block tx // 32's upper-right 8x8: row (tx % 32) // 4, columns 2 (tx % 4) + cc
            inv_s[16 * (tx // 32) + (tx % 32) // 4, 16 * (tx // 32) + 8 + 2 * (tx % 4) + cc] = 0.0
    if eye:
        for q in T.unroll(4):
            inv_s[8 * (tx // 16) + (tx % 16) // 2, 8 * (tx // 16) + 4 * (tx % 2) + q] = T.if_then_else(
                (tx % 16) // 2 == 4 * (tx % 2) + q, 1.0, 0.0)
    if tx < 64:
        solve_diag_column(m_s, inv_s, b_s, col, tx, 8, eye)
    bw = tx // 32
    r = (tx % 32) // 4
    c = 2 * (tx % 4)
    yv[0] = 0.0
    yv[1] = 0.0
    for j in T.unroll(8):
        t21 = b_s[16 * bw + 8 + r] * m_s[16 * bw + j, 16 * bw + 8 + r]
        yv[0] += t21 * inv_s[16 * bw + j, 16 * bw + c]
        yv[1] += t21 * inv_s[16 * bw + j, 16 * bw + c + 1]
    if shfl:
        yv[2] = 0.0
        yv[3] = 0.0
        for j in T.unroll(8):
            d2 = inv_s[16 * bw + 8 + r, 16 * bw + 8 + j]
            yv[2] -= d2 * T.shfl_sync(yv[0], 4 * j + tx % 4)
            yv[3] -= d2 * T.shfl_sync(yv[1], 4 * j + tx % 4)
        inv_s[16 * bw + 8 + r, 16 * bw + c] = yv[2]
        inv_s[16 * bw + 8 + r, 16 * bw + c + 1] = yv[3]
        if g_out is not None:
            # G's blocks of this 16-block: X and, from the 8x8 solves, the two diagonal blocks' row r, columns c, c + 1
            for e in T.unroll(2):
                g_out[g_st, 16 * bw + 8 + r, 16 * bw + c + e] = T.cast(yv[2 + e] * b_s[16 * bw + c + e], g_out.dtype)
                for d in T.unroll(2):
                    g_out[g_st, 16 * bw + 8 * d + r, 16 * bw + 8 * d + c + e] = T.cast(
                        inv_s[16 * bw + 8 * d + r, 16 * bw + 8 * d + c + e] * b_s[16 * bw + 8 * d + c + e],
                        g_out.dtype)
    else:
        ys[8 * bw + r, y0 + c] = yv[0]
        ys[8 * bw + r, y0 + c + 1] = yv[1]
        yv[0] = 0.0
        yv[1] = 0.0
        for j in T.unroll(8):
            d2 = inv_s[16 * bw + 8 + r, 16 * bw + 8 + j]
            yv[0] -= d2 * ys[8 * bw + j, y0 + c]
            yv[1] -= d2 * ys[8 * bw + j, y0 + c + 1]
        inv_s[16 * bw + 8 + r, 16 * bw + c] = yv[0]
        inv_s[16 * bw + 8 + r, 16 * bw + c + 1] = yv[1]


@T.macro
def tc_level2_merge(m_s, inv_s, b_s, acc32, ys, y0):
    """The level-2 merge by T.gemm (TF32 mma.sync: operands rounded to 10 mantissa bits): Y = T_lo D_lo
    (T_lo[r, j] = M[j, 32 + r], D_lo = inv[0:32, 0:32]) scaled by beta's rows into the scratch ys[r, y0 + c]; then
    -D_hi Y (D_hi = inv[32:64, 32:64]) into the inverse's block inv[32 + r, c]. acc32: a 32 x 32 fp32 fragment."""
    T.gemm(m_s[0:32, 32:64], inv_s[0:32, 0:32], acc32, transpose_A=True, clear_accum=True)
    for r, c in T.Parallel(32, 32):
        beta_r = b_s[32 + r]
        ys[r, y0 + c] = beta_r * acc32[r, c]
    T.gemm(inv_s[32:64, 32:64], ys[0:32, y0:y0 + 32], acc32, clear_accum=True)
    for r, c in T.Parallel(32, 32):
        inv_s[32 + r, c] = -acc32[r, c]

