"""Small warp-level sums of the chunk-gradient kernels."""

import tilelang.language as T


@T.macro
def add_whole_chunk_terms(dgc_s, hs_s, ka_s, st, gam_last, last, tx, part: T.Ref, K, BT):
    """dgc_s[last] += gam_last * sum_j hs_s[st, j] + sum_j ka_s[st, j]: the whole-chunk gate terms of dgc,
    gamma_last <dS1, S0> (hs_s: partial sums of S0 * dS1 in its first K entries) and sum K * dK_r (ka_s: BT
    row sums), landing on the chunk's last real token. `st` is the stage of the two-stage arrays.

    The first warp of the calling warpgroup (tx < 32) sums them: each lane a strided part (K / 32 + BT / 32
    loads), then a butterfly over the warp, instead of one thread's chain of K + BT dependent adds with
    the warpgroup's other warps waiting at its next barrier. The order of the additions differs from the
    chain's (not bitwise the same dg on the last real token). `part` is an fp32 var of the caller."""
    if tx < 32:
        part = T.float32(0)
        for m in T.unroll(K // 32):
            part = part + hs_s[st, tx + 32 * m]
        part = gam_last * part
        for m in T.unroll(BT // 32):
            part = part + ka_s[st, tx + 32 * m]
        part = T.warp_reduce_sum(part)
        if tx == 0:
            dgc_s[last] = dgc_s[last] + part


@T.macro
def fold_state_row_sums(h_s, dh_s, hprod, hsum, hs_s, st, K, V):
    """hs_s[st, a] <- sum over the four row quarters q and the columns b of S0[q * K / 4 + a, b] * dS1[q * K / 4 + a, b]
    (bf16 tiles, fp32 products): the quarters added elementwise into hprod ([K / 4, V] fp32, a loop, not unrolled:
    unrolled it was the chunk gradient's WK's largest stretch of code, ~700 SASS instructions), then one row
    reduction into hsum. Only the total over a is used (<S0, dS1>, dg's whole-chunk term: add_whole_chunk_terms with
    K / 4 partial sums)."""
    T.clear(hprod)
    for qtr in T.serial(4):
        for a, b in T.Parallel(K // 4, V):
            hprod[a, b] += T.cast(h_s[qtr * (K // 4) + a, b], "float32") * T.cast(
                dh_s[qtr * (K // 4) + a, b], "float32")
    T.reduce_sum(hprod, hsum, dim=1)
    for a in T.Parallel(K // 4):
        hs_s[st, a] = hsum[a]


@T.macro
def gemm_state_sums(h_s, dh_s, acc, hs_s, st, BT):
    """hs_s[st, r] <- sum over the two row blocks q and the columns b of S0[q * BT + r, b] * dS1[q * BT + r, b]
    (r < BT; S0, dS1 [2 BT, V] bf16 tiles): the diagonal of S0[:BT] dS1[:BT]^T + S0[BT:] dS1[BT:]^T, two products
    of the tensor cores into `acc` ([BT, BT] fp32 wgmma accumulator) instead of fold_state_row_sums' elementwise
    products and row reduction; the threads that hold a diagonal element write it. The same total (<S0, dS1>, the
    whole-chunk term of dg) in another order of additions: add_whole_chunk_terms with BT partial sums."""
    T.gemm(h_s[0:BT, :], dh_s[0:BT, :], acc, transpose_B=True, clear_accum=True)
    T.gemm(h_s[BT:2 * BT, :], dh_s[BT:2 * BT, :], acc, transpose_B=True)
    for r, c in T.Parallel(BT, BT):
        if r == c:
            hs_s[st, r] = acc[r, c]


@T.macro
def add_state_part(dqf, acc, q_s, gam, scale, rows, BT, K):
    """dQ's state part scaled into place and added: acc = dO S0^T ([BT, K] fp32) becomes scale * gam_r * acc, dqf += it,
    and rows[r] <- sum_c of it * Q[r, c] (the gate's row sums; acc is left holding the products)."""
    for r, c in T.Parallel(BT, K):
        acc[r, c] *= scale * gam[r]
    for r, c in T.Parallel(BT, K):
        dqf[r, c] += acc[r, c]
        acc[r, c] = acc[r, c] * q_s[r, c]
    T.reduce_sum(acc, rows, dim=1)


@T.macro
def row_products_by_halves(x, q_s, tmp, rows, rows2, BT):
    """rows[r] <- sum_c x[r, c] * Q[r, c] over x's 2 BT columns ([BT, 2 BT] fp32, Q bf16 in shared memory), one BT-column
    half at a time through the BT x BT fragment tmp (whose layout shares x's rows); rows2 holds the second half's."""
    for r, c in T.Parallel(BT, BT):
        tmp[r, c] = x[r, c] * q_s[r, c]
    T.reduce_sum(tmp, rows, dim=1)
    for r, c in T.Parallel(BT, BT):
        tmp[r, c] = x[r, c + BT] * q_s[r, c + BT]
    T.reduce_sum(tmp, rows2, dim=1)
    for r in T.Parallel(BT):
        rows[r] += rows2[r]
