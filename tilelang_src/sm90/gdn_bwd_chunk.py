"""Per-chunk gradients of the GDN backward (SM90), one CTA per (chunk slot, qk-head), walking the
group of v-heads that share the qk-head.

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

dg (w.r.t. the raw g) is the reverse chunk-local cumsum of dgc. dq and dk of a qk-head are the sums of
dQ and dK over its group of v-heads: the CTA accumulates them in fp32 fragments across the group, in
v-head order (deterministic), and stores them once in q's dtype (no per-v-head fp32 copies, no second
pass to sum them). The state parts of dQ and dK, whose row products with Q and K feed dg, are formed
in a scratch fragment before they join the sums. Q and K are loaded once per CTA.

Shared memory: TileLang keeps a buffer used inside a loop alive for the whole loop (no aliasing by
liveness there), so the v-head loop reuses buffers by hand where shape and dtype match and the uses do
not overlap: dO's buffer holds dVg once dO S0^T and Pg^T dO are done, Vd's holds dVd once dO Vd^T and
Vd dS1^T are done, Ag's holds dA after dv = Ag^T dVd, Pg's holds A^T dA after dVd, dP's holds
dKK + dKK^T, and one padded fp32 buffer holds E's first part, E, dAb * A and dKK in turn. Registers:
dQ and dK live across the whole loop, so Gamma is formed again where it is needed late instead of
being held (one exp2 per element per v-head); U = K S0 is not needed late: the gate of W,
sum_v dVg_iv U_iv, equals sum_k K_ik (dVg S0^T)_ik, and dVg S0^T is dK's dVg part.
Every CTA computes unconditionally; stores are masked, and slots of the padding tail write zeros.

Loads overlap the previous v-head's tail: the next v-head's tiles go into buffers as soon as they die,
and the top of each iteration only waits. dS1's buffer dies after dVd's K dS1 (gamma_last <dS1, S0>'s row
sums are taken at the top, right after the wait): the next dS1 is issued there (TMA, on dh_bar). After
dAb's GEMM W's, dVg's and S0's buffers are dead: the next S0, V and dO are issued there, with the next A
into the other stage of A's two-stage buffer (S0 by TMA on ld_bar; V, dO and A by element copies, zero
past the chunk's end) and the next g and beta by cp.async into a staging pair copied at the top. Every thread arrives once per v-head on each barrier, so each completes one phase per v-head.
Barriers: the row sums that cross the two warpgroups share one barrier pair for a thread's two rows
(batched T.reduce_sum), and the column sums of E and dAb * A are taken from the fp32 shared matrix
by 4 threads per column in the same butterfly order as the reduction of a transposed read, with two
shuffles and no block barrier (that reduction cost 3 barriers per row).
"""

import tilelang.language as T

from common.chunk_store import store_chunk_rows
from common.seq_index import chunk_of_slot, chunk_rows

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
    reduce_batch: int = 2,  # row sums per barrier pair of a cross-warpgroup reduction (1 for the sm100 family:
    # TileLang 0.1.15's batched reduction leaves its pack buffer undefined when lowered for sm_100a)
):
    num_tokens = T.dynamic("num_tokens")
    H = T.dynamic("num_qk_heads")
    HV = T.dynamic("num_v_heads")
    N1 = T.dynamic("num_seqs_plus_one")
    NH = T.dynamic("num_h_slots")
    accum = "float32"

    @T.macro
    def load_vhead(h, v, d_o, A, h_s, w_s, do_s, a_s, stage, slot, t0, n_valid, hv, bar):
        """S0, V, dO and A of v-head hv, completing on bar[0] (every thread arrives once): S0 by TMA, the others
        by element copies zero-filled past the chunk's end (rows of the next sequence are never read).
        Tried and dropped: TMA for V, dO and A of full chunks (a NaN in the rows after a partial chunk reached
        that chunk's gradients, tests/test_nonfinite.py, and no faster: 4.18 against 4.19 ms, (16, 32) 8192x4);
        cp.async for full chunks with cp.async.mbarrier.arrive.noinc on bar (slower, 1131.7 against 1110.9 us
        at (16, 64) 8192 tokens, and a NaN after a partial chunk again reached its dq, dk, dg, dbeta but not
        its dv, on the H200 with the chunk's own loads masked; branch next6, 2a855e4). The likely cause, found later
        in gdn_bwd_chunk_ws.py: nvcc 13.0 miscompiled a full-chunk test written on the clamped n_valid
        (common/chunk_load.py)."""
        T.tma_copy(h[slot, hv, 0:K, 0:V], h_s, barrier=bar[0])
        for r, c in T.Parallel(BT, V):
            w_s[r, c] = T.if_then_else(r < n_valid, v[t0 + r, hv, c], T.cast(0, dtype))
            do_s[r, c] = T.if_then_else(r < n_valid, d_o[t0 + r, hv, c], T.cast(0, dtype))
        for r, c in T.Parallel(BT, BT):
            a_s[stage, r, c] = T.if_then_else(r < n_valid, A[t0 + r, hv, c], T.cast(0, dtype))
        T.fence_proxy_async()  # generic-proxy writes, read by wgmma (async proxy)
        T.barrier_arrive(bar[0])

    @T.macro
    def load_gate(g_cumsum, beta, gn_s, bn_s, t0, n_valid, last, num_tokens, hv, tx):
        """g (repeating the last real cumsum; 0 for an empty chunk) and beta (0 past the chunk's end) of
        v-head hv into gn_s, bn_s by cp.async (a predicate false zero-fills), one commit group; waited on
        with ptx_wait_group(0) by the same threads."""
        if tx < BT:
            T.ptx_cp_async(T.access_ptr(gn_s[tx], "w"),
                           T.access_ptr(g_cumsum[T.min(t0 + T.min(tx, last), num_tokens - 1), hv], "r"), 1,
                           predicate=n_valid > 0)
            T.ptx_cp_async(T.access_ptr(bn_s[tx], "w"),
                           T.access_ptr(beta[T.min(t0 + tx, num_tokens - 1), hv], "r"), 1,
                           predicate=tx < n_valid)
            T.ptx_commit_group()

    @T.macro
    def col_sums(src, out, cs, tx):
        """out[j] = sum_i src[i, j] (fp32 C x C shared) in the order of a 64-lane butterfly all-reduce over i
        (i with i ^ 32, then ^ 16, ^ 8, ^ 4, ^ 2, ^ 1: the order of T.reduce_sum over a transposed read),
        without its 16 x 3 block barriers: thread (j, q) takes the rows q + 4m (strides 32 to 4 of i in
        registers) and two shuffles finish the quad (strides 2 and 1). q is lane bits 2-3 and a warp's 8
        columns are 4 + 4 apart by 16, so with the 4-float row padding its 32 reads hit 32 distinct banks."""
        w = tx // 32
        lane = tx % 32
        q = (lane // 4) % 4
        j = (w // 4) * 32 + (lane // 16) * 16 + (w % 4) * 4 + lane % 4
        for m in T.unroll(BT // 4):
            cs[m] = T.float32(0)
        for m in T.unroll(BT // 4):
            cs[m] = cs[m] + src[q + 4 * m, j]  # 0 + x on every leaf, as the reduction's init and first add
        for m in T.unroll(BT // 8):
            cs[m] = cs[m] + cs[m + BT // 8]
        for m in T.unroll(BT // 16):
            cs[m] = cs[m] + cs[m + BT // 16]
        for m in T.unroll(BT // 32):
            cs[m] = cs[m] + cs[m + BT // 32]
        cs[0] = cs[0] + cs[1]
        cs[0] = cs[0] + T.shfl_xor(cs[0], 8)  # q ^ 2
        cs[0] = cs[0] + T.shfl_xor(cs[0], 4)  # q ^ 1
        if q == 0:
            out[j] = cs[0]

    @T.macro
    def join_sum(part, total, other, rows, out_s):
        """total += part, and out_s[r] = sum_c part[r, c] * other[r, c] (the row products that feed a gate
        of dgc), through rows; part is clobbered."""
        for r, c in T.Parallel(BT, K):
            total[r, c] += part[r, c]
            part[r, c] = part[r, c] * other[r, c]
        T.reduce_sum(part, rows, dim=1, batch=reduce_batch)
        for r in T.Parallel(BT):
            out_s[r] = rows[r]

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
        dq: T.Tensor((num_tokens, H, K), dtype),  # summed over the group of v-heads
        dk: T.Tensor((num_tokens, H, K), dtype),  # summed over the group of v-heads
        dv: T.Tensor((num_tokens, HV, V), dtype),
        dg: T.Tensor((num_tokens, HV), accum),
        dbeta: T.Tensor((num_tokens, HV), accum),
        scale: T.float32,
        group: T.int32,  # HV / H, from the launcher: head indices are products, never divisions
    ):
        # grid (slot, qk-head); the v-heads hq * group + jv of the group are a loop. TileLang re-derives every
        # index in 64 bits inside each predicated load and store, where a division costs ~100 instructions;
        # here there is none
        with T.Kernel(NH, H, threads=threads) as (slot, hq):
            num_seqs = N1 - 1

            seq = T.alloc_var("int32", init=0)
            hi = T.alloc_var("int32", init=0)
            seq_end = T.alloc_var("int32", init=0)
            t0 = chunk_of_slot(cu_seqlens, num_seqs, num_tokens, slot, BT, seq, hi, seq_end)
            # rows [t0, t0 + n_valid) belong to the chunk; a slot of the padding tail owns rows up to T
            n_valid, n_tail = chunk_rows(t0, seq, seq_end, num_seqs, num_tokens, BT)
            n_store = T.max(n_valid, n_tail)  # at most one of the two is nonzero
            last = T.max(n_valid - 1, 0)  # row of the chunk's last real token

            q_s = T.alloc_shared((BT, K), dtype)
            k_s = T.alloc_shared((BT, K), dtype)
            w_s = T.alloc_shared((BT, V), dtype)  # V, then W = V - gamma * U in place
            do_s = T.alloc_shared((BT, V), dtype)  # dO, then dVg
            a_s = T.alloc_shared((2, BT, BT), dtype)  # A, two stages: the next v-head's lands while dL reads this one's
            h_s = T.alloc_shared((K, V), dtype)  # S~0
            dh_s = T.alloc_shared((K, V), dtype)  # dS~1
            vd_s = T.alloc_shared((BT, V), dtype)  # Vd, then dVd
            ag_s = T.alloc_shared((BT, BT), dtype)  # Ag, then dA = dAb * beta_col
            pg_s = T.alloc_shared((BT, BT), dtype)  # Pg, then A^T dA
            dp_s = T.alloc_shared((BT, BT), dtype)  # dP, then dKK + dKK^T
            # fp32 C x C matrix written in the accumulator layout and read transposed (E, then dAb * A, then
            # dKK): rows padded to BT + 4 floats so that a warp's 8 rows x 4 column pairs fall in distinct
            # banks (a 64-float stride puts each column of a warp in one bank: 8-way conflicts on write,
            # 4-way on the read)
            sq_s = T.alloc_shared((BT, BT + ROW_PAD), accum)
            g_s = T.alloc_shared((BT,), accum)
            b_s = T.alloc_shared((BT,), accum)
            gn_s = T.alloc_shared((BT,), accum)  # the next v-head's g and beta, landing by cp.async
            bn_s = T.alloc_shared((BT,), accum)
            gam_s = T.alloc_shared((BT,), accum)
            rr_s = T.alloc_shared((BT,), accum)
            # per-row gate terms, each written once from its reduction and combined at the end
            # (fragments of different layouts own different rows: no read-modify-write across them)
            gu_s = T.alloc_shared((BT,), accum)  # sum_v dVg * U = sum_k K * (dVg S0^T)   (gate of W)
            ka_s = T.alloc_shared((BT,), accum)  # sum_k K * dK_r         (gate of r)
            gq_s = T.alloc_shared((BT,), accum)  # sum_k Q * dQ           (gate of O's state part)
            er_s = T.alloc_shared((BT,), accum)  # sum_j E_ij             (gate of Gamma, rows)
            ec_s = T.alloc_shared((BT,), accum)  # sum_j E_ji             (gate of Gamma, columns)
            db1_s = T.alloc_shared((BT,), accum)  # sum_i dAb_ij A_ij
            db2_s = T.alloc_shared((BT,), accum)  # sum_j dL_ij (K K^T)_ij
            hs_s = T.alloc_shared((K,), accum)  # row sums of S0 * dS1
            dgc_s = T.alloc_shared((BT,), accum)

            gm = T.alloc_fragment((BT, BT), accum)  # Gamma (recompute phase)
            pg = T.alloc_fragment((BT, BT), accum)  # scale * Gamma * P, then E, then dL * K K^T
            mat = T.alloc_fragment((BT, BT), accum)  # dPg, then dAb, then dL
            u = T.alloc_fragment((BT, V), accum)  # U (recompute), U again, then U * dVg
            acc = T.alloc_fragment((BT, V), accum)  # scratch C x V
            dkf = T.alloc_fragment((BT, K), accum)  # dK, summed over the group
            dqf = T.alloc_fragment((BT, K), accum)  # dQ, summed over the group
            rows_v = T.alloc_fragment((BT,), accum)  # row sums of C x V fragments
            rows_c = T.alloc_fragment((BT,), accum)  # row sums of C x C fragments
            hsum = T.alloc_fragment((K,), accum)
            hprod = T.alloc_fragment((K, V), accum)
            cs = T.alloc_local((BT // 4,), accum)  # one thread's quarter of a column of a C x C matrix
            dgl = T.alloc_var(accum)  # the last real token's dgc, summed in a register
            # the next v-head's loads: S0, V, dO, A (ld_bar) and dS1 (dh_bar); every thread arrives once per
            # v-head, the TMA bytes come on top, so each barrier completes one phase per v-head (parity jv % 2)
            ld_bar = T.alloc_barrier(threads)
            dh_bar = T.alloc_barrier(threads)
            tx = T.get_thread_binding()

            # ---- v-head 0's loads (TMA), then the qk-head's while they fly (rows past the chunk's end are zero)
            T.tma_copy(dh[slot, hq * group, 0:K, 0:V], dh_s, barrier=dh_bar[0])
            T.barrier_arrive(dh_bar[0])
            load_vhead(h, v, d_o, A, h_s, w_s, do_s, a_s, 0, slot, t0, n_valid, hq * group, ld_bar)
            load_gate(g_cumsum, beta, gn_s, bn_s, t0, n_valid, last, num_tokens, hq * group, tx)
            for r, c in T.Parallel(BT, K):
                q_s[r, c] = T.if_then_else(r < n_valid, q[t0 + r, hq, c], T.cast(0, dtype))
                k_s[r, c] = T.if_then_else(r < n_valid, k[t0 + r, hq, c], T.cast(0, dtype))
            T.clear(dqf)
            T.clear(dkf)

            for jv in T.serial(group):
                hv = hq * group + jv
                st = jv % 2  # A's stage
                # ---- the v-head's loads, issued during the previous v-head (the prologue for the first)
                T.ptx_wait_group(0)  # this thread's cp.async of g and beta
                T.sync_threads()  # the previous v-head's last reads of the shared buffers are done
                if tx < BT:
                    g_s[tx] = gn_s[tx]
                    b_s[tx] = bn_s[tx]
                T.barrier_wait(dh_bar[0], jv % 2)
                T.barrier_wait(ld_bar[0], jv % 2)
                # gamma_last <dS1, S0>'s row sums first, so that S0's and dS1's buffers die early (the 64-register
                # product here, where only dQ and dK are live)
                for a, b in T.Parallel(K, V):
                    hprod[a, b] = T.cast(h_s[a, b], accum) * T.cast(dh_s[a, b], accum)
                T.reduce_sum(hprod, hsum, dim=1)
                T.copy(hsum, hs_s)
                for r in T.Parallel(BT):
                    gam_s[r] = T.exp2(g_s[r] * LOG2E)
                    rr_s[r] = T.if_then_else(r < n_valid, T.exp2((g_s[BT - 1] - g_s[r]) * LOG2E), 0.0)

                # ---- recompute the forward: P, Gamma, Ag, Pg, U, W, Vd
                T.gemm(q_s, k_s, pg, transpose_B=True, clear_accum=True)
                for r, c in T.Parallel(BT, BT):
                    gm[r, c] = T.if_then_else(r >= c, T.exp2((g_s[r] - g_s[c]) * LOG2E), 0.0)
                # formed in registers and copied whole (stmatrix), not one 2-byte store per element from the loop
                # that forms them (the chunk prep's pattern, docs/fwd_profile.md); mat is free until dPg. So are
                # the other C x C matrices below (about 35 us of 1200 at (16, 64), H200_next6.md)
                for r, c in T.Parallel(BT, BT):
                    pg[r, c] = scale * gm[r, c] * pg[r, c]
                T.copy(pg, pg_s)
                for r, c in T.Parallel(BT, BT):
                    mat[r, c] = gm[r, c] * a_s[st, r, c] * b_s[c]
                T.copy(mat, ag_s)
                T.gemm(k_s, h_s, u, clear_accum=True)  # U = K S0
                # W in registers, then one copy: a shared read and write in one loop got a barrier per iteration
                for r, c in T.Parallel(BT, V):
                    acc[r, c] = w_s[r, c] - gam_s[r] * u[r, c]
                T.copy(acc, w_s)
                T.gemm(ag_s, w_s, acc, clear_accum=True)  # Vd = Ag W
                T.copy(acc, vd_s)

                # ---- dPg = dO Vd^T: E's first part Pg * dPg (kept in fp32 shared memory until its second part),
                # dP; dQ += dP K, dK += dP^T Q
                T.gemm(do_s, vd_s, mat, transpose_B=True, clear_accum=True)
                # pg's next value is E (below) and mat's is dAb: both are free after these products
                for r, c in T.Parallel(BT, BT):
                    pg[r, c] = pg[r, c] * mat[r, c]
                T.copy(pg, sq_s[:, 0:BT])
                for r, c in T.Parallel(BT, BT):
                    mat[r, c] = scale * gm[r, c] * mat[r, c]
                T.copy(mat, dp_s)
                T.gemm(dp_s, k_s, dqf)  # dQ += dP K
                T.gemm(dp_s, q_s, dkf, transpose_A=True)  # dK += dP^T Q

                # ---- dK's r part: r * (Vd dS1^T) in acc (its row products with K: the gate of r), into the sum
                T.gemm(vd_s, dh_s, acc, transpose_B=True, clear_accum=True)
                for r, c in T.Parallel(BT, K):
                    acc[r, c] *= rr_s[r]
                join_sum(acc, dkf, k_s, rows_v, ka_s)

                # ---- dQ's state part: scale * gamma * (dO S0^T) in acc (its row products with Q: a gate), into the sum
                T.gemm(do_s, h_s, acc, transpose_B=True, clear_accum=True)
                for r, c in T.Parallel(BT, K):
                    acc[r, c] *= scale * gam_s[r]
                join_sum(acc, dqf, q_s, rows_v, gq_s)

                # ---- dVd = r * (K dS1) + Pg^T dO, into Vd's buffer (Vd is no longer read)
                T.gemm(k_s, dh_s, acc, clear_accum=True)
                for r, c in T.Parallel(BT, V):
                    acc[r, c] *= rr_s[r]
                T.gemm(pg_s, do_s, acc, transpose_A=True)
                T.sync_threads()  # both warpgroups' reads of dS1 and Vd are done
                T.copy(acc, vd_s)
                if jv + 1 < group:
                    T.tma_copy(dh[slot, hv + 1, 0:K, 0:V], dh_s, barrier=dh_bar[0])
                    T.barrier_arrive(dh_bar[0])

                # ---- dv = Ag^T dVd;  dVg = -gamma * dv into dO's buffer (dO is no longer read)
                T.gemm(ag_s, vd_s, acc, transpose_A=True, clear_accum=True)
                # dv through dO's buffer (dO is no longer read; dVg goes there next): stored from the accumulator,
                # the index arithmetic held 6% of the kernel's warp samples (Nsight Compute, H200)
                T.copy(acc, do_s)
                store_chunk_rows(do_s, dv, t0, hv, n_valid, n_store, BT, V, dtype)
                # in registers, then one copy: a loop that also writes shared memory got a block barrier per
                # iteration from TileLang's sync planner (16 per v-head)
                for r, c in T.Parallel(BT, V):
                    acc[r, c] = -gam_s[r] * acc[r, c]
                T.copy(acc, do_s)
                # ---- dK's dVg part, dVg S0^T, in acc (its row products with K: the gate of W,
                # sum_v dVg_iv U_iv = sum_k K_ik (dVg S0^T)_ik, so U = K S0 is not formed again), into the sum
                T.gemm(do_s, h_s, acc, transpose_B=True, clear_accum=True)
                join_sum(acc, dkf, k_s, rows_v, gu_s)

                # ---- dAb = Gamma * (dVd W^T); E += dAb * Ab; dA = dAb * beta_col into Ag's buffer (its last read
                # was dv); Gamma is formed again (not held since the recompute)
                T.gemm(vd_s, w_s, mat, transpose_B=True, clear_accum=True)
                if jv + 1 < group:
                    T.sync_threads()  # W's, dVg's and S0's last reads (both warpgroups) are done
                    load_gate(g_cumsum, beta, gn_s, bn_s, t0, n_valid, last, num_tokens, hv + 1, tx)
                    load_vhead(h, v, d_o, A, h_s, w_s, do_s, a_s, 1 - st, slot, t0, n_valid, hv + 1, ld_bar)
                for r, c in T.Parallel(BT, BT):
                    mat[r, c] = T.if_then_else(r >= c, T.exp2((g_s[r] - g_s[c]) * LOG2E), 0.0) * mat[r, c]  # dAb
                    pg[r, c] = sq_s[r, c] + mat[r, c] * a_s[st, r, c] * b_s[c]  # E
                    ag_s[r, c] = T.cast(mat[r, c] * b_s[c], dtype)  # dA
                # Gamma gate: dgc_i += sum_j E_ij - sum_j E_ji; the column sums are taken from E in fp32
                # shared memory (exact, no bf16 transpose; col_sums, in the order of the former transposed read)
                T.reduce_sum(pg, rows_c, dim=1, batch=reduce_batch)
                T.copy(pg, sq_s[:, 0:BT])
                for r in T.Parallel(BT):
                    er_s[r] = rows_c[r]
                col_sums(sq_s, ec_s, cs, tx)
                # dbeta_j = sum_i dAb_ij A_ij, the same way
                for r, c in T.Parallel(BT, BT):
                    mat[r, c] = mat[r, c] * a_s[st, r, c]  # dAb's last use (mat's next value is A^T dA)
                T.copy(mat, sq_s[:, 0:BT])
                col_sums(sq_s, db1_s, cs, tx)

                # ---- through the inverse: dL = strictLower(-A^T dA A^T), dKK = diag(beta) dL
                T.gemm(a_s[st, :, :], ag_s, mat, transpose_A=True, clear_accum=True)
                T.copy(mat, pg_s)  # A^T dA (Pg's last read was dVd)
                T.gemm(pg_s, a_s[st, :, :], mat, transpose_B=True, clear_accum=True)
                T.gemm(k_s, k_s, pg, transpose_B=True, clear_accum=True)  # K K^T (E's sums are taken)
                for r, c in T.Parallel(BT, BT):
                    mat[r, c] = T.if_then_else(r > c, -mat[r, c], 0.0)  # dL
                    pg[r, c] = mat[r, c] * pg[r, c]
                for r, c in T.Parallel(BT, BT):
                    mat[r, c] = b_s[r] * mat[r, c]  # dKK (dL's last use)
                T.copy(mat, sq_s[:, 0:BT])
                T.reduce_sum(pg, rows_c, dim=1, batch=reduce_batch)
                for r in T.Parallel(BT):
                    db2_s[r] = rows_c[r]
                for r, c in T.Parallel(BT, BT):
                    dp_s[r, c] = T.cast(sq_s[r, c] + sq_s[c, r], dtype)  # dKK + dKK^T (dP's last read is done)
                T.gemm(dp_s, k_s, dkf)  # dK += (dKK + dKK^T) K

                # ---- the v-head's dg and dbeta; whole-chunk terms on the last real token:
                # gamma_last <dS1, S0> (row sums taken at the top) + sum K * dK_r
                for r in T.Parallel(BT):
                    dgc_s[r] = T.if_then_else(
                        r < n_valid, gu_s[r] - ka_s[r] + gq_s[r] + er_s[r] - ec_s[r], 0.0)
                if tx == last:
                    dgl = dgc_s[last]
                    for j in T.serial(K):
                        dgl = dgl + gam_s[BT - 1] * hs_s[j]
                    for j in T.serial(BT):
                        dgl = dgl + ka_s[j]
                    dgc_s[last] = dgl
                T.cumsum(dgc_s, dim=0, reverse=True)
                for r in T.Parallel(BT):
                    if r < n_store:
                        dg[t0 + r, hv] = T.if_then_else(r < n_valid, dgc_s[r], 0.0)
                        dbeta[t0 + r, hv] = T.if_then_else(r < n_valid, db1_s[r] + db2_s[r], 0.0)

            # ---- the qk-head's dq and dk: the group's sums, once, in q's dtype
            # through Q's and K's buffers (dead after the loop)
            T.copy(dqf, q_s)
            T.copy(dkf, k_s)
            store_chunk_rows(q_s, dq, t0, hq, n_valid, n_store, BT, K, dtype)
            store_chunk_rows(k_s, dk, t0, hq, n_valid, n_store, BT, K, dtype)

    return gdn_bwd_chunk
