"""Per-chunk gradients of the GDN backward (SM90), one CTA per (chunk slot, v-head).

Given the chunk's start state S~0 = h[slot] and end-state gradient dS~1 = dh[slot] (both from the
sequential kernels), every token gradient of the chunk is local (docs/gdn_chunk_derivation.md,
"Backward", steps 1-12):

    dVd = r * (K dS1) + Pg^T dO          dv  = Ag^T dVd         dVg = -gamma * dv
    dK  = r * (Vd dS1^T) + dVg S0^T + dP^T Q + (dKK + dKK^T) K
    dQ  = scale * gamma * (dO S0^T) + dP K,   dP = scale * Gamma * (dO Vd^T)
    dAb = Gamma * (dVd W^T);  dbeta_j = sum_i dAb_ij A_ij + sum_j dL_ij (K K^T)_ij
    dL  = strictLower(-A^T (dAb * beta_col) A^T),   dKK = diag(beta) dL
    dgc = row sums of the gate terms; E - E^T is reduced in fp32 (row sums minus column sums,
          no transpose), and the whole-chunk terms land on the chunk's last real token.

dg (w.r.t. the raw g) is the reverse chunk-local cumsum of dgc. dq and dk are per v-head (fp32);
the op sums each group of v-heads. Every CTA computes unconditionally; stores are masked, and
slots of the padding tail write zeros.
"""

import tilelang.language as T

from common.seq_index import chunk_of_slot

LOG2E = 1.4426950408889634
ROW_PAD = 4  # floats of padding per row of the fp32 C x C shared matrices (see below)


def gdn_bwd_chunk_sm90(
    # task config
    dtype: str = "bfloat16",
    K: int = 128,
    V: int = 128,
    # kernel config
    BT: int = 64,
    threads: int = 256,
):
    num_tokens = T.dynamic("num_tokens")
    H = T.dynamic("num_qk_heads")
    HV = T.dynamic("num_v_heads")
    N1 = T.dynamic("num_seqs_plus_one")
    NH = T.dynamic("num_h_slots")
    accum = "float32"

    @T.prim_func
    def gdn_bwd_chunk(
        q: T.Tensor((num_tokens, H, K), dtype),
        k: T.Tensor((num_tokens, H, K), dtype),
        v: T.Tensor((num_tokens, HV, V), dtype),
        d_o: T.Tensor((num_tokens, HV, V), dtype),
        A: T.Tensor((num_tokens, HV, BT), dtype),
        g_cumsum: T.Tensor((num_tokens, HV), accum),
        beta: T.Tensor((num_tokens, HV), accum),
        cu_seqlens: T.Tensor((N1,), "int32"),
        h: T.Tensor((NH, HV, K, V), dtype),
        dh: T.Tensor((NH, HV, K, V), dtype),
        dq: T.Tensor((num_tokens, HV, K), accum),  # per v-head
        dk: T.Tensor((num_tokens, HV, K), accum),  # per v-head
        dv: T.Tensor((num_tokens, HV, V), dtype),
        dg: T.Tensor((num_tokens, HV), accum),
        dbeta: T.Tensor((num_tokens, HV), accum),
        scale: T.float32,
        group: T.int32,  # HV / H, from the launcher: head indices are products, never divisions
    ):
        # grid (slot, qk-head, v-head in the group): TileLang re-derives every index in 64 bits inside each
        # predicated load and store, where a division costs ~100 instructions; here there is none
        with T.Kernel(NH, H, group, threads=threads) as (slot, hq, j):
            hv = hq * group + j
            num_seqs = N1 - 1

            seq = T.alloc_var("int32", init=0)
            hi = T.alloc_var("int32", init=0)
            seq_end = T.alloc_var("int32", init=0)
            t0 = chunk_of_slot(cu_seqlens, num_seqs, num_tokens, slot, BT, seq, hi, seq_end)
            # rows [t0, t0 + n_valid) belong to the chunk; a slot of the padding tail owns rows up to T
            n_valid = T.max(T.min(seq_end - t0, BT), 0)
            n_tail = T.if_then_else(seq == num_seqs, T.max(T.min(num_tokens - t0, BT), 0), 0)
            n_store = T.max(n_valid, n_tail)  # at most one of the two is nonzero
            last = T.max(n_valid - 1, 0)  # row of the chunk's last real token

            q_s = T.alloc_shared((BT, K), dtype)
            k_s = T.alloc_shared((BT, K), dtype)
            w_s = T.alloc_shared((BT, V), dtype)  # V, then W = V - gamma * U in place
            do_s = T.alloc_shared((BT, V), dtype)
            a_s = T.alloc_shared((BT, BT), dtype)
            h_s = T.alloc_shared((K, V), dtype)  # S~0
            dh_s = T.alloc_shared((K, V), dtype)  # dS~1
            g_s = T.alloc_shared((BT,), accum)
            b_s = T.alloc_shared((BT,), accum)
            gam_s = T.alloc_shared((BT,), accum)
            rr_s = T.alloc_shared((BT,), accum)
            # per-row gate terms, each written once from its reduction and combined at the end
            # (fragments of different layouts own different rows: no read-modify-write across them)
            gu_s = T.alloc_shared((BT,), accum)  # sum_v dVg * U          (gate of W)
            ka_s = T.alloc_shared((BT,), accum)  # sum_k K * dK_r         (gate of r)
            gq_s = T.alloc_shared((BT,), accum)  # sum_k Q * dQ           (gate of O's state part)
            er_s = T.alloc_shared((BT,), accum)  # sum_j E_ij             (gate of Gamma, rows)
            ec_s = T.alloc_shared((BT,), accum)  # sum_j E_ji             (gate of Gamma, columns)
            db1_s = T.alloc_shared((BT,), accum)  # sum_i dAb_ij A_ij
            db2_s = T.alloc_shared((BT,), accum)  # sum_j dL_ij (K K^T)_ij
            hs_s = T.alloc_shared((K,), accum)  # row sums of S0 * dS1
            dgc_s = T.alloc_shared((BT,), accum)
            ag_s = T.alloc_shared((BT, BT), dtype)
            pg_s = T.alloc_shared((BT, BT), dtype)
            vd_s = T.alloc_shared((BT, V), dtype)
            dvd_s = T.alloc_shared((BT, V), dtype)
            dvg_s = T.alloc_shared((BT, V), dtype)
            dp_s = T.alloc_shared((BT, BT), dtype)
            da_s = T.alloc_shared((BT, BT), dtype)
            tmp_s = T.alloc_shared((BT, BT), dtype)
            # fp32 C x C matrices written in the accumulator layout and read transposed: rows padded to
            # BT + 4 floats so that a warp's 8 rows x 4 column pairs fall in distinct banks (a 64-float
            # stride puts each column of a warp in one bank: 8-way conflicts on write, 4-way on the read)
            dkk_s = T.alloc_shared((BT, BT + ROW_PAD), accum)
            e_s = T.alloc_shared((BT, BT + ROW_PAD), accum)  # E, exact fp32
            dba_s = T.alloc_shared((BT, BT + ROW_PAD), accum)  # dAb * A, exact fp32
            sym_s = T.alloc_shared((BT, BT), dtype)

            gm = T.alloc_fragment((BT, BT), accum)  # Gamma
            pg = T.alloc_fragment((BT, BT), accum)  # scale * Gamma * P, then E
            mat = T.alloc_fragment((BT, BT), accum)  # scratch C x C
            u = T.alloc_fragment((BT, V), accum)  # U, then U * dVg
            acc = T.alloc_fragment((BT, V), accum)  # scratch C x V
            dkf = T.alloc_fragment((BT, K), accum)  # dK
            dqf = T.alloc_fragment((BT, K), accum)  # dQ
            rows_v = T.alloc_fragment((BT,), accum)  # row sums of C x V fragments
            rows_c = T.alloc_fragment((BT,), accum)  # row sums of C x C fragments
            tr = T.alloc_fragment((BT, BT), accum)  # a C x C matrix read transposed from fp32 shared
            rows_t = T.alloc_fragment((BT,), accum)  # row sums of tr
            hsum = T.alloc_fragment((K,), accum)
            hprod = T.alloc_fragment((K, V), accum)

            # ---- loads (rows past the chunk's end are zero; g repeats the last real cumsum)
            for r, c in T.Parallel(BT, K):
                q_s[r, c] = T.if_then_else(r < n_valid, q[t0 + r, hq, c], T.cast(0, dtype))
                k_s[r, c] = T.if_then_else(r < n_valid, k[t0 + r, hq, c], T.cast(0, dtype))
            for r, c in T.Parallel(BT, V):
                w_s[r, c] = T.if_then_else(r < n_valid, v[t0 + r, hv, c], T.cast(0, dtype))
                do_s[r, c] = T.if_then_else(r < n_valid, d_o[t0 + r, hv, c], T.cast(0, dtype))
            for r, c in T.Parallel(BT, BT):
                a_s[r, c] = T.if_then_else(r < n_valid, A[t0 + r, hv, c], T.cast(0, dtype))
            T.copy(h[slot, hv, 0:K, 0:V], h_s)
            T.copy(dh[slot, hv, 0:K, 0:V], dh_s)
            for r in T.Parallel(BT):
                g_s[r] = T.if_then_else(n_valid > 0, g_cumsum[T.min(t0 + T.min(r, last), num_tokens - 1), hv], 0.0)
                b_s[r] = T.if_then_else(r < n_valid, beta[T.min(t0 + r, num_tokens - 1), hv], 0.0)
            for r in T.Parallel(BT):
                gam_s[r] = T.exp2(g_s[r] * LOG2E)
                rr_s[r] = T.if_then_else(r < n_valid, T.exp2((g_s[BT - 1] - g_s[r]) * LOG2E), 0.0)

            # ---- recompute the forward: P, Gamma, Ag, Pg, U, W, Vd
            T.gemm(q_s, k_s, pg, transpose_B=True, clear_accum=True)
            for r, c in T.Parallel(BT, BT):
                gm[r, c] = T.if_then_else(r >= c, T.exp2((g_s[r] - g_s[c]) * LOG2E), 0.0)
            for r, c in T.Parallel(BT, BT):
                pg[r, c] = scale * gm[r, c] * pg[r, c]
                ag_s[r, c] = T.cast(gm[r, c] * a_s[r, c] * b_s[c], dtype)
                pg_s[r, c] = T.cast(pg[r, c], dtype)
            T.gemm(k_s, h_s, u, clear_accum=True)  # U = K S0
            # W in registers, then one copy: a shared read and write in one loop got a barrier per iteration
            for r, c in T.Parallel(BT, V):
                acc[r, c] = w_s[r, c] - gam_s[r] * u[r, c]
            T.copy(acc, w_s)
            T.gemm(ag_s, w_s, acc, clear_accum=True)  # Vd = Ag W
            T.copy(acc, vd_s)

            # ---- dVd = r * (K dS1) + Pg^T dO;  dv = Ag^T dVd;  dVg = -gamma * dv
            T.gemm(k_s, dh_s, acc, clear_accum=True)
            for r, c in T.Parallel(BT, V):
                acc[r, c] *= rr_s[r]
            T.gemm(pg_s, do_s, acc, transpose_A=True)
            T.copy(acc, dvd_s)
            T.gemm(ag_s, dvd_s, acc, transpose_A=True, clear_accum=True)
            for r, c in T.Parallel(BT, V):
                if r < n_store:
                    dv[t0 + r, hv, c] = T.cast(T.if_then_else(r < n_valid, acc[r, c], 0.0), dtype)
            for r, c in T.Parallel(BT, V):
                acc[r, c] = -gam_s[r] * acc[r, c]
                dvg_s[r, c] = T.cast(acc[r, c], dtype)
            # gate of W: dgc_i += sum_v dVg_iv U_iv
            for r, c in T.Parallel(BT, V):
                u[r, c] = u[r, c] * acc[r, c]
            T.reduce_sum(u, rows_v, dim=1)
            for r in T.Parallel(BT):
                gu_s[r] = rows_v[r]

            # ---- dK: r * (Vd dS1^T) (the gate of r), then + dVg S0^T
            T.gemm(vd_s, dh_s, dkf, transpose_B=True, clear_accum=True)
            for r, c in T.Parallel(BT, K):
                dkf[r, c] *= rr_s[r]
            for r, c in T.Parallel(BT, K):
                acc[r, c] = dkf[r, c] * k_s[r, c]
            T.reduce_sum(acc, rows_v, dim=1)
            for r in T.Parallel(BT):
                ka_s[r] = rows_v[r]
            T.gemm(dvg_s, h_s, dkf, transpose_B=True)

            # ---- dQ = scale * gamma * (dO S0^T) (+ its gate), then the intra-chunk part dP
            T.gemm(do_s, h_s, dqf, transpose_B=True, clear_accum=True)
            for r, c in T.Parallel(BT, K):
                dqf[r, c] *= scale * gam_s[r]
            for r, c in T.Parallel(BT, K):
                acc[r, c] = dqf[r, c] * q_s[r, c]
            T.reduce_sum(acc, rows_v, dim=1)
            for r in T.Parallel(BT):
                gq_s[r] = rows_v[r]
            T.gemm(do_s, vd_s, mat, transpose_B=True, clear_accum=True)  # dPg = dO Vd^T
            for r, c in T.Parallel(BT, BT):
                pg[r, c] = pg[r, c] * mat[r, c]  # E = Pg * dPg (first part)
                dp_s[r, c] = T.cast(scale * gm[r, c] * mat[r, c], dtype)
            T.gemm(dp_s, k_s, dqf)  # dQ += dP K
            T.gemm(dp_s, q_s, dkf, transpose_A=True)  # dK += dP^T Q
            for r, c in T.Parallel(BT, K):
                if r < n_store:
                    dq[t0 + r, hv, c] = T.if_then_else(r < n_valid, dqf[r, c], 0.0)

            # ---- through Ag = Gamma * A * beta_col: dAb = Gamma * (dVd W^T)
            T.gemm(dvd_s, w_s, mat, transpose_B=True, clear_accum=True)
            for r, c in T.Parallel(BT, BT):
                mat[r, c] = gm[r, c] * mat[r, c]  # dAb
                pg[r, c] += mat[r, c] * a_s[r, c] * b_s[c]  # E += dAb * Ab
                da_s[r, c] = T.cast(mat[r, c] * b_s[c], dtype)  # dA = dAb * beta_col
                dba_s[r, c] = mat[r, c] * a_s[r, c]
            # Gamma gate: dgc_i += sum_j E_ij - sum_j E_ji; the column sums are row sums of E^T
            # read back from fp32 shared memory (exact, no bf16 transpose)
            T.reduce_sum(pg, rows_c, dim=1)
            for r, c in T.Parallel(BT, BT):
                e_s[r, c] = pg[r, c]
            for r, c in T.Parallel(BT, BT):
                tr[r, c] = e_s[c, r]
            T.reduce_sum(tr, rows_t, dim=1)
            for r in T.Parallel(BT):
                er_s[r] = rows_c[r]
            for r in T.Parallel(BT):
                ec_s[r] = rows_t[r]
            # dbeta_j = sum_i dAb_ij A_ij
            for r, c in T.Parallel(BT, BT):
                tr[r, c] = dba_s[c, r]
            T.reduce_sum(tr, rows_t, dim=1)
            for r in T.Parallel(BT):
                db1_s[r] = rows_t[r]

            # ---- through the inverse: dL = strictLower(-A^T dA A^T), dKK = diag(beta) dL
            T.gemm(a_s, da_s, mat, transpose_A=True, clear_accum=True)
            T.copy(mat, tmp_s)
            T.gemm(tmp_s, a_s, mat, transpose_B=True, clear_accum=True)
            T.gemm(k_s, k_s, pg, transpose_B=True, clear_accum=True)  # K K^T
            for r, c in T.Parallel(BT, BT):
                mat[r, c] = T.if_then_else(r > c, -mat[r, c], 0.0)  # dL
                pg[r, c] = mat[r, c] * pg[r, c]
                dkk_s[r, c] = b_s[r] * mat[r, c]
            T.reduce_sum(pg, rows_c, dim=1)
            for r in T.Parallel(BT):
                db2_s[r] = rows_c[r]
            for r, c in T.Parallel(BT, BT):
                sym_s[r, c] = T.cast(dkk_s[r, c] + dkk_s[c, r], dtype)
            T.gemm(sym_s, k_s, dkf)  # dK += (dKK + dKK^T) K
            for r, c in T.Parallel(BT, K):
                if r < n_store:
                    dk[t0 + r, hv, c] = T.if_then_else(r < n_valid, dkf[r, c], 0.0)

            # ---- whole-chunk terms on the last real token: gamma_last <dS1, S0> + sum K * dK_r
            for a, b in T.Parallel(K, V):
                hprod[a, b] = T.cast(h_s[a, b], accum) * T.cast(dh_s[a, b], accum)
            T.reduce_sum(hprod, hsum, dim=1)
            T.copy(hsum, hs_s)
            for r in T.Parallel(BT):
                dgc_s[r] = T.if_then_else(
                    r < n_valid, gu_s[r] - ka_s[r] + gq_s[r] + er_s[r] - ec_s[r], 0.0)
            for r in T.Parallel(BT):
                if r == last:
                    for j in T.serial(K):
                        dgc_s[r] += gam_s[BT - 1] * hs_s[j]
                    for j in T.serial(BT):
                        dgc_s[r] += ka_s[j]
            T.cumsum(dgc_s, dim=0, reverse=True)
            for r in T.Parallel(BT):
                if r < n_store:
                    dg[t0 + r, hv] = T.if_then_else(r < n_valid, dgc_s[r], 0.0)
                    dbeta[t0 + r, hv] = T.if_then_else(r < n_valid, db1_s[r] + db2_s[r], 0.0)

    return gdn_bwd_chunk
