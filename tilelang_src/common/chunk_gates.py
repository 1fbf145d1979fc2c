"""The chunk's decay matrix, the products it gates and column sums, for the warp-specialized chunk-gradient kernels
(sm90/gdn_bwd_chunk_ws.py and sm90/gdn_bwd_fused.py): Gamma_rc = exp(g_r - g_c) on and below the diagonal from a
stage of the gate cumsum in shared memory (held in registers or formed inline), Ag, dAb and E, dL, and the column sums
of an fp32 C x C shared matrix (the transposed sums that feed dg stay in fp32). The forward's z_in_kernel option
(sm90/gdn_fwd.py, off) forms Pg and Ag with scale_gamma and gate_a."""

import tilelang.language as T

LOG2E = 1.4426950408889634


@T.macro
def form_gamma(gm, g_s, st, BT):
    """gm <- Gamma of stage st: exp(g_r - g_c) on and below the diagonal, 0 above."""
    for r, c in T.Parallel(BT, BT):
        gr = g_s[st, r]
        gc = g_s[st, c]
        gm[r, c] = T.if_then_else(r >= c, T.exp2((gr - gc) * LOG2E), 0.0)


@T.macro
def scale_gamma(x, gm, g_s, st, scale, hold_gamma, BT):
    """x <- scale * Gamma * x: from the held Gamma gm when `hold_gamma` (trace time), else with Gamma formed inline."""
    if hold_gamma:
        for r, c in T.Parallel(BT, BT):
            x[r, c] = (scale * gm[r, c]) * x[r, c]
    else:
        for r, c in T.Parallel(BT, BT):
            gr = g_s[st, r]
            gc = g_s[st, c]
            x[r, c] = T.if_then_else(r >= c, scale * T.exp2((gr - gc) * LOG2E), 0.0) * x[r, c]


@T.macro
def col_sums(src, out, cs, tx, BT):
    """out[j] = sum_i src[i, j] of the fp32 C x C shared matrix: thread j < BT of the warpgroup (tx its index there)
    walks column j (a warp's 32 columns of one row fall in 32 banks), 8 partial sums in cs (8 fp32 locals) then a
    tree."""
    if tx < BT:
        for m in T.unroll(8):
            cs[m] = src[m, tx]
        for i in T.unroll(BT // 8 - 1):
            for m in T.unroll(8):
                cs[m] = cs[m] + src[8 * (i + 1) + m, tx]
        for m in T.unroll(4):
            cs[m] = cs[m] + cs[m + 4]
        cs[0] = cs[0] + cs[2]
        cs[1] = cs[1] + cs[3]
        out[tx] = cs[0] + cs[1]


@T.macro
def gate_a(out, gm, g_s, a_s, b_s, st, hold_gamma, BT):
    """out <- Ag = Gamma * A * beta_col of stage st: from the held Gamma gm when `hold_gamma` (trace time), else with
    Gamma formed inline."""
    if hold_gamma:
        for r, c in T.Parallel(BT, BT):
            bc = b_s[st, c]
            out[r, c] = gm[r, c] * a_s[st, r, c] * bc
    else:
        for r, c in T.Parallel(BT, BT):
            gr = g_s[st, r]
            gc = g_s[st, c]
            bc = b_s[st, c]
            out[r, c] = T.if_then_else(r >= c, T.exp2((gr - gc) * LOG2E), 0.0) * a_s[st, r, c] * bc


@T.macro
def gate_e(dab, e, gm, e1_s, g_s, a_s, b_s, st, hold_gamma, BT):
    """dab <- dAb = Gamma * dab (dab holding dVd W^T), and e <- E = E1 + dAb * A * beta_col (E1 in the fp32 shared
    matrix e1_s), of stage st: Gamma held or inline as in gate_a."""
    if hold_gamma:
        for r, c in T.Parallel(BT, BT):
            bc = b_s[st, c]
            dab[r, c] = gm[r, c] * dab[r, c]
            e[r, c] = e1_s[r, c] + dab[r, c] * a_s[st, r, c] * bc
    else:
        for r, c in T.Parallel(BT, BT):
            gr = g_s[st, r]
            gc = g_s[st, c]
            bc = b_s[st, c]
            dab[r, c] = T.if_then_else(r >= c, T.exp2((gr - gc) * LOG2E), 0.0) * dab[r, c]
            e[r, c] = e1_s[r, c] + dab[r, c] * a_s[st, r, c] * bc


@T.macro
def lower_dl(dl, kk, b_s, st, BT):
    """dl <- beta_row * strictLower(-dl) (dl holding A^T dA A^T: dL, scaled by beta for dKK), and kk <- the unscaled
    dL * kk (kk holding K K^T: dbeta's second part's products)."""
    for r, c in T.Parallel(BT, BT):
        dl[r, c] = T.if_then_else(r > c, -dl[r, c], 0.0)
        kk[r, c] = dl[r, c] * kk[r, c]
    for r, c in T.Parallel(BT, BT):
        dl[r, c] = b_s[st, r] * dl[r, c]
