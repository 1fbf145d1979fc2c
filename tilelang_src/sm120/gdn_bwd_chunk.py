"""Per-chunk gradients of the GDN backward for consumer Blackwell (sm_120a): the math of
sm90/gdn_bwd_chunk.py within the 99 KB of shared memory per block, one CTA per (chunk slot, v-head).

Given the chunk's start state S~0 = h[slot] and end-state gradient dS~1 = dh[slot] (from the
sequential kernels), with Pg = scale * Gamma * (Q K^T) and Ag = Gamma * A * beta_col
(docs/gdn_chunk_derivation.md, "Backward", steps 1-12):

    dVd = r * (K dS1) + Pg^T dO          dv  = Ag^T dVd         dVg = -gamma * dv
    dK  = r * (Vd dS1^T) + dVg S0^T + dP^T Q + (dKK + dKK^T) K
    dQ  = scale * gamma * (dO S0^T) + dP K,   dP = scale * Gamma * (dO Vd^T)
    dAb = Gamma * (dVd W^T);  dbeta_j = sum_i dAb_ij A_ij + sum_j dL_ij (K K^T)_ij
    dL  = strictLower(-A^T (dAb * beta_col) A^T),   dKK = diag(beta) dL
    dgc = row sums of the gate terms; E - E^T is reduced in fp32 (row sums minus column sums,
          no transpose), and the whole-chunk terms land on the chunk's last real token.

What differs from the SM90 program is only the order of the sums over V: S0, dS1, V and dO are
read in BV-column slices (their full [K, V] tiles alone would take 64 KB), every per-token
quantity of a slice (U, W, Vd, dVd, dv, dVg) is computed exactly as there, and the products that
sum over V (Vd dS1^T, dVg S0^T, dO S0^T, dO Vd^T, dVd W^T, the gate row sums and <S0, dS1>) are
accumulated over the slices in fp32. Every CTA computes unconditionally; stores are masked, and
slots of the padding tail write zeros. Same prim_func signature as sm90/gdn_bwd_chunk.py.
"""

import tilelang.language as T

from common.seq_index import chunk_of_slot, chunk_rows

LOG2E = 1.4426950408889634


def gdn_bwd_chunk_sm120(
    # task config
    dtype: str = "bfloat16",
    K: int = 128,
    V: int = 128,
    # kernel config
    BT: int = 64,
    BV: int = 32,
    threads: int = 256,
):
    assert V % BV == 0
    NV = V // BV
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
        group: T.int32,  # HV / H (the SM90 launchers' argument; unused here)
    ):
        with T.Kernel(NH * HV, threads=threads) as (bx,):
            slot = bx // HV
            hv = bx % HV
            hq = hv // (HV // H)
            num_seqs = N1 - 1

            seq = T.alloc_var("int32", init=0)
            hi = T.alloc_var("int32", init=0)
            seq_end = T.alloc_var("int32", init=0)
            t0 = chunk_of_slot(cu_seqlens, num_seqs, num_tokens, slot, BT, seq, hi, seq_end)
            # rows [t0, t0 + n_valid) belong to the chunk; a slot of the padding tail owns rows up to T
            n_valid, n_tail = chunk_rows(t0, seq, seq_end, num_seqs, num_tokens, BT)
            n_store = T.max(n_valid, n_tail)  # at most one of the two is nonzero
            last = T.max(n_valid - 1, 0)  # row of the chunk's last real token

            # whole chunk
            q_s = T.alloc_shared((BT, K), dtype)
            k_s = T.alloc_shared((BT, K), dtype)
            a_s = T.alloc_shared((BT, BT), dtype)
            ag_s = T.alloc_shared((BT, BT), dtype)  # Ag; after the slices: dP, then dA, then dKK + dKK^T
            pg_s = T.alloc_shared((BT, BT), dtype)  # Pg; after the slices: -A^T dA
            sq_s = T.alloc_shared((BT, BT), accum)  # fp32 scratch: E, then dAb * A, then dKK
            g_s = T.alloc_shared((BT,), accum)
            b_s = T.alloc_shared((BT,), accum)
            gam_s = T.alloc_shared((BT,), accum)
            rr_s = T.alloc_shared((BT,), accum)
            # per-row gate terms, each written once from its reduction and combined at the end
            gu_s = T.alloc_shared((BT,), accum)  # sum_v dVg * U          (gate of W)
            ka_s = T.alloc_shared((BT,), accum)  # sum_k K * dK_r         (gate of r)
            gq_s = T.alloc_shared((BT,), accum)  # sum_k Q * dQ           (gate of O's state part)
            er_s = T.alloc_shared((BT,), accum)  # sum_j E_ij             (gate of Gamma, rows)
            ec_s = T.alloc_shared((BT,), accum)  # sum_j E_ji             (gate of Gamma, columns)
            db1_s = T.alloc_shared((BT,), accum)  # sum_i dAb_ij A_ij
            db2_s = T.alloc_shared((BT,), accum)  # sum_j dL_ij (K K^T)_ij
            hs_s = T.alloc_shared((K,), accum)  # row sums of S0 * dS1
            # the sums over V of one slice each (reduction results are replicated across threads,
            # so they are stored, never added in place; the slices are summed at the end)
            gu_part = T.alloc_shared((NV, BT), accum)
            hs_part = T.alloc_shared((NV, K), accum)
            dgc_s = T.alloc_shared((BT,), accum)
            # one BV-column slice of V
            h_s = T.alloc_shared((K, BV), dtype)  # S~0
            dh_s = T.alloc_shared((K, BV), dtype)  # dS~1
            w_s = T.alloc_shared((BT, BV), dtype)  # V, then W = V - gamma * U in place
            do_s = T.alloc_shared((BT, BV), dtype)
            vd_s = T.alloc_shared((BT, BV), dtype)
            dvd_s = T.alloc_shared((BT, BV), dtype)
            dvg_s = T.alloc_shared((BT, BV), dtype)

            gm = T.alloc_fragment((BT, BT), accum)  # Gamma
            pg = T.alloc_fragment((BT, BT), accum)  # scale * Gamma * P, then E; later K K^T products
            mat = T.alloc_fragment((BT, BT), accum)  # scratch C x C
            dpg = T.alloc_fragment((BT, BT), accum)  # dO Vd^T, summed over slices
            dab = T.alloc_fragment((BT, BT), accum)  # dVd W^T, summed over slices
            u = T.alloc_fragment((BT, BV), accum)  # U, then U * dVg
            acc = T.alloc_fragment((BT, BV), accum)  # scratch C x BV
            dkr = T.alloc_fragment((BT, K), accum)  # Vd dS1^T, summed over slices; then dK
            dk2 = T.alloc_fragment((BT, K), accum)  # dVg S0^T, summed over slices
            dqf = T.alloc_fragment((BT, K), accum)  # dO S0^T, summed over slices; then dQ
            rk = T.alloc_fragment((BT, K), accum)  # scratch C x K (row products)
            rows_v = T.alloc_fragment((BT,), accum)  # row sums of C x BV fragments
            rows_k = T.alloc_fragment((BT,), accum)  # row sums of C x K fragments
            rows_c = T.alloc_fragment((BT,), accum)  # row sums of C x C fragments
            tr = T.alloc_fragment((BT, BT), accum)  # a C x C matrix read transposed from fp32 shared
            rows_t = T.alloc_fragment((BT,), accum)  # row sums of tr
            hsum = T.alloc_fragment((K,), accum)
            hprod = T.alloc_fragment((K, BV), accum)

            # ---- loads of the whole chunk (rows past its end are zero; g repeats the last real cumsum)
            for r, c in T.Parallel(BT, K):
                q_s[r, c] = T.if_then_else(r < n_valid, q[T.min(t0 + r, num_tokens - 1), hq, c], T.cast(0, dtype))
                k_s[r, c] = T.if_then_else(r < n_valid, k[T.min(t0 + r, num_tokens - 1), hq, c], T.cast(0, dtype))
            for r, c in T.Parallel(BT, BT):
                a_s[r, c] = T.if_then_else(r < n_valid, A[T.min(t0 + r, num_tokens - 1), hv, c], T.cast(0, dtype))
            for r in T.Parallel(BT):
                g_s[r] = T.if_then_else(n_valid > 0, g_cumsum[T.min(t0 + T.min(r, last), num_tokens - 1), hv], 0.0)
                b_s[r] = T.if_then_else(r < n_valid, beta[T.min(t0 + r, num_tokens - 1), hv], 0.0)
            for r in T.Parallel(BT):
                gam_s[r] = T.exp2(g_s[r] * LOG2E)
                rr_s[r] = T.if_then_else(r < n_valid, T.exp2((g_s[BT - 1] - g_s[r]) * LOG2E), 0.0)

            # ---- recompute the forward's chunk matrices: Gamma, Ag, Pg
            T.gemm(q_s, k_s, pg, transpose_B=True, clear_accum=True)
            for r, c in T.Parallel(BT, BT):
                gm[r, c] = T.if_then_else(r >= c, T.exp2((g_s[r] - g_s[c]) * LOG2E), 0.0)
            for r, c in T.Parallel(BT, BT):
                pg[r, c] = scale * gm[r, c] * pg[r, c]
                ag_s[r, c] = T.cast(gm[r, c] * a_s[r, c] * b_s[c], dtype)
                pg_s[r, c] = T.cast(pg[r, c], dtype)

            T.clear(dkr)
            T.clear(dk2)
            T.clear(dqf)
            T.clear(dpg)
            T.clear(dab)
            for vs in T.serial(NV):
                v0 = vs * BV
                # ---- the slice's columns of S0, dS1, V, dO
                T.copy(h[slot, hv, 0:K, v0:v0 + BV], h_s)
                T.copy(dh[slot, hv, 0:K, v0:v0 + BV], dh_s)
                for r, c in T.Parallel(BT, BV):
                    w_s[r, c] = T.if_then_else(r < n_valid, v[T.min(t0 + r, num_tokens - 1), hv, v0 + c],
                                               T.cast(0, dtype))
                    do_s[r, c] = T.if_then_else(r < n_valid, d_o[T.min(t0 + r, num_tokens - 1), hv, v0 + c],
                                                T.cast(0, dtype))

                # ---- forward: U = K S0;  W = V - gamma * U;  Vd = Ag W
                T.gemm(k_s, h_s, u, clear_accum=True)
                for r, c in T.Parallel(BT, BV):
                    w_s[r, c] = T.cast(w_s[r, c] - gam_s[r] * u[r, c], dtype)
                T.gemm(ag_s, w_s, acc, clear_accum=True)
                T.copy(acc, vd_s)

                # ---- dVd = r * (K dS1) + Pg^T dO;  dv = Ag^T dVd;  dVg = -gamma * dv
                T.gemm(k_s, dh_s, acc, clear_accum=True)
                for r, c in T.Parallel(BT, BV):
                    acc[r, c] *= rr_s[r]
                T.gemm(pg_s, do_s, acc, transpose_A=True)
                T.copy(acc, dvd_s)
                T.gemm(ag_s, dvd_s, acc, transpose_A=True, clear_accum=True)
                for r, c in T.Parallel(BT, BV):
                    if r < n_store:
                        dv[t0 + r, hv, v0 + c] = T.cast(T.if_then_else(r < n_valid, acc[r, c], 0.0), dtype)
                for r, c in T.Parallel(BT, BV):
                    acc[r, c] = -gam_s[r] * acc[r, c]
                    dvg_s[r, c] = T.cast(acc[r, c], dtype)
                # gate of W: dgc_i += sum_v dVg_iv U_iv
                for r, c in T.Parallel(BT, BV):
                    u[r, c] = u[r, c] * acc[r, c]
                T.reduce_sum(u, rows_v, dim=1)
                for r in T.Parallel(BT):
                    gu_part[vs, r] = rows_v[r]

                # ---- the sums over V
                T.gemm(vd_s, dh_s, dkr, transpose_B=True)  # Vd dS1^T
                T.gemm(dvg_s, h_s, dk2, transpose_B=True)  # dVg S0^T
                T.gemm(do_s, h_s, dqf, transpose_B=True)  # dO S0^T
                T.gemm(do_s, vd_s, dpg, transpose_B=True)  # dPg = dO Vd^T
                T.gemm(dvd_s, w_s, dab, transpose_B=True)  # dVd W^T
                for a, b in T.Parallel(K, BV):
                    hprod[a, b] = T.cast(h_s[a, b], accum) * T.cast(dh_s[a, b], accum)
                T.reduce_sum(hprod, hsum, dim=1)
                for a in T.Parallel(K):
                    hs_part[vs, a] = hsum[a]
                # the next slice's loads overwrite buffers these GEMMs read
                T.sync_threads()

            for r in T.Parallel(BT):
                gu_s[r] = gu_part[0, r]
                for j in T.serial(NV - 1):
                    gu_s[r] += gu_part[j + 1, r]
            for a in T.Parallel(K):
                hs_s[a] = hs_part[0, a]
                for j in T.serial(NV - 1):
                    hs_s[a] += hs_part[j + 1, a]

            # ---- dK: r * (Vd dS1^T) (the gate of r), then + dVg S0^T
            for r, c in T.Parallel(BT, K):
                dkr[r, c] *= rr_s[r]
            for r, c in T.Parallel(BT, K):
                rk[r, c] = dkr[r, c] * k_s[r, c]
            T.reduce_sum(rk, rows_k, dim=1)
            for r in T.Parallel(BT):
                ka_s[r] = rows_k[r]
            for r, c in T.Parallel(BT, K):
                dkr[r, c] += dk2[r, c]

            # ---- dQ = scale * gamma * (dO S0^T) (+ its gate), then the intra-chunk part dP
            for r, c in T.Parallel(BT, K):
                dqf[r, c] *= scale * gam_s[r]
            for r, c in T.Parallel(BT, K):
                rk[r, c] = dqf[r, c] * q_s[r, c]
            T.reduce_sum(rk, rows_k, dim=1)
            for r in T.Parallel(BT):
                gq_s[r] = rows_k[r]
            for r, c in T.Parallel(BT, BT):
                pg[r, c] = pg[r, c] * dpg[r, c]  # E = Pg * dPg (first part)
                ag_s[r, c] = T.cast(scale * gm[r, c] * dpg[r, c], dtype)  # dP
            T.gemm(ag_s, k_s, dqf)  # dQ += dP K
            T.gemm(ag_s, q_s, dkr, transpose_A=True)  # dK += dP^T Q
            for r, c in T.Parallel(BT, K):
                if r < n_store:
                    dq[t0 + r, hv, c] = T.if_then_else(r < n_valid, dqf[r, c], 0.0)

            # ---- through Ag = Gamma * A * beta_col: dAb = Gamma * (dVd W^T)
            for r, c in T.Parallel(BT, BT):
                mat[r, c] = gm[r, c] * dab[r, c]  # dAb
                pg[r, c] += mat[r, c] * a_s[r, c] * b_s[c]  # E += dAb * Ab
            # Gamma gate: dgc_i += sum_j E_ij - sum_j E_ji; the column sums are row sums of E^T
            # read back from fp32 shared memory (exact, no bf16 transpose)
            T.reduce_sum(pg, rows_c, dim=1)
            T.copy(pg, sq_s)
            for r, c in T.Parallel(BT, BT):
                tr[r, c] = sq_s[c, r]
            T.reduce_sum(tr, rows_t, dim=1)
            for r in T.Parallel(BT):
                er_s[r] = rows_c[r]
            for r in T.Parallel(BT):
                ec_s[r] = rows_t[r]
            # dbeta_j = sum_i dAb_ij A_ij
            T.sync_threads()
            for r, c in T.Parallel(BT, BT):
                ag_s[r, c] = T.cast(mat[r, c] * b_s[c], dtype)  # dA = dAb * beta_col
                sq_s[r, c] = mat[r, c] * a_s[r, c]
            for r, c in T.Parallel(BT, BT):
                tr[r, c] = sq_s[c, r]
            T.reduce_sum(tr, rows_t, dim=1)
            for r in T.Parallel(BT):
                db1_s[r] = rows_t[r]

            # ---- through the inverse: dL = strictLower(-A^T dA A^T), dKK = diag(beta) dL
            T.gemm(a_s, ag_s, mat, transpose_A=True, clear_accum=True)
            T.copy(mat, pg_s)
            T.gemm(pg_s, a_s, mat, transpose_B=True, clear_accum=True)
            T.gemm(k_s, k_s, pg, transpose_B=True, clear_accum=True)  # K K^T
            T.sync_threads()
            for r, c in T.Parallel(BT, BT):
                mat[r, c] = T.if_then_else(r > c, -mat[r, c], 0.0)  # dL
                pg[r, c] = mat[r, c] * pg[r, c]
                sq_s[r, c] = b_s[r] * mat[r, c]  # dKK
            T.reduce_sum(pg, rows_c, dim=1)
            for r in T.Parallel(BT):
                db2_s[r] = rows_c[r]
            for r, c in T.Parallel(BT, BT):
                ag_s[r, c] = T.cast(sq_s[r, c] + sq_s[c, r], dtype)
            T.gemm(ag_s, k_s, dkr)  # dK += (dKK + dKK^T) K
            for r, c in T.Parallel(BT, K):
                if r < n_store:
                    dk[t0 + r, hv, c] = T.if_then_else(r < n_valid, dkr[r, c], 0.0)

            # ---- whole-chunk terms on the last real token: gamma_last <dS1, S0> + sum K * dK_r
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
