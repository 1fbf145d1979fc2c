"""State-gradient recurrence of the GDN backward for consumer Blackwell (sm_120a): the math of
sm90/gdn_bwd_dh.py in one thread block without warp specialization, within 99 KB of shared memory.

One CTA per (sequence, v-head, BV-wide slice of V) walks the sequence's chunks from last to first
with dS = dL/dS_end [K, BV] in fp32 registers (docs/gdn_chunk_derivation.md, "Backward"):

    dh[slot]  = dS~                                   (q dtype, the chunk's end-state gradient)
    dVd = r * (K dS~) + Pg^T dO                       Pg = scale * Gamma * (Q K^T)
    dVg = -gamma * (Ag^T dVd)                         Ag = Gamma * A * beta_col
    dS  = gamma_last * dS + Q^T (scale * gamma * dO) + K^T dVg

and after the first chunk dh0 = dS. Starts from dht (the final-state gradient) or 0. Buffers are
reused in place where a value dies: A becomes Ag, dO becomes scale * gamma * dO, dVd becomes dVg.
Segments, the warm-up pass (context parallelism) and the tables that describe them are those of
sm90/gdn_bwd_dh.py; same prim_func signature.
"""

import tilelang.language as T

from common.segments import end_state, segment_row, start_state
from common.walk_dims import walk_dims

LOG2E = 1.4426950408889634


def gdn_bwd_dh_sm120(
    # task config
    dtype: str = "bfloat16",
    K: int = 128,
    V: int = 128,
    # kernel config
    BT: int = 64,
    BV: int = 64,
    threads: int = 256,
):
    assert V % BV == 0
    NV = V // BV
    num_tokens, H, HV, N1, NS, NH, NSEG, NGRID, NROWS = walk_dims()  # common/walk_dims.py
    accum = "float32"

    @T.prim_func
    def gdn_bwd_dh(
        q: T.Tensor((num_tokens, H, K), dtype),
        k: T.Tensor((num_tokens, H, K), dtype),
        d_o: T.Tensor((num_tokens, HV, V), dtype),
        A: T.Tensor((num_tokens, HV, BT), dtype),
        g_cumsum: T.Tensor((num_tokens, HV), accum),
        beta: T.Tensor((num_tokens, HV), accum),
        cu_seqlens: T.Tensor((N1,), "int32"),
        dht: T.Tensor((NS, HV, K, V), accum),  # [N, HV, K, V], or [N, HV, V, K] if state_v_first
        dh: T.Tensor((NH, HV, K, V), dtype),  # dL/dS at the end of each chunk, by chunk slot ([K, V])
        dh0: T.Tensor((NS, HV, K, V), accum),  # layout of dht
        seg_seq: T.Tensor((NSEG,), "int32"),  # the sequence of every segment slot (N: padding)
        ranges: T.Tensor((NROWS, HV, 3), "int32"),  # (first chunk, count, flags) per CTA row (reverse tables)
        cp_ds: T.Tensor((NSEG, HV, K, V), accum),  # gradient at the end of every segment but the last (main pass)
        cp_out: T.Tensor((NGRID, HV, K, V), accum),  # warm-up end gradients, then transposed transitions
        scale: T.float32,
        use_dht: T.int32,
        store_dh0: T.int32,
        state_v_first: T.int32,
        warmup: T.int32,
        group: T.int32,  # HV / H (the SM90 launchers' argument; unused here)
    ):
        with T.Kernel(NV * HV * NGRID, threads=threads) as (bx,):
            vb = bx % NV
            hv = (bx // NV) % HV
            seg = (bx // (NV * HV)) % NSEG
            is_m = bx // (NV * HV * NSEG)  # 1: a transposed-transition CTA of the warm-up pass
            hq = hv // (HV // H)
            v0 = vb * BV
            num_seqs = N1 - 1
            # the segment's sequence, and the chunks this CTA runs (sm90/seg_plan.py, reverse tables); the
            # warm-up rows follow the main-pass rows; the transposed-transition CTAs load dO = 0 (up to do_end)
            n, c_first, n_iter, flags, seq_start, seq_end, do_end = segment_row(
                seg_seq, ranges, cu_seqlens, seg, warmup * NSEG + bx // (NV * HV), hv, num_seqs, num_tokens, BT)
            is_first = flags % 2 == 0  # the sequence's first segment stores dh0
            is_last = (flags // 2) % 2 == 1  # the sequence's last segment starts from dht
            first_slot = seq_start // BT + n

            q_s = T.alloc_shared((BT, K), dtype)
            k_s = T.alloc_shared((BT, K), dtype)
            a_s = T.alloc_shared((BT, BT), dtype)  # A, then Ag in place
            do_s = T.alloc_shared((BT, BV), dtype)  # dO, then scale * gamma * dO in place
            g_s = T.alloc_shared((BT,), accum)
            b_s = T.alloc_shared((BT,), accum)
            gam_s = T.alloc_shared((BT,), accum)  # gamma
            rr_s = T.alloc_shared((BT,), accum)  # r
            ds_s = T.alloc_shared((K, BV), dtype)  # dS~
            p_s = T.alloc_shared((BT, BT), dtype)  # Pg
            dv_s = T.alloc_shared((BT, BV), dtype)  # dVd, then dVg in place

            ds_frag = T.alloc_fragment((K, BV), accum)
            dvd_frag = T.alloc_fragment((BT, BV), accum)
            dw_frag = T.alloc_fragment((BT, BV), accum)
            p_frag = T.alloc_fragment((BT, BT), accum)
            gm_frag = T.alloc_fragment((BT, BT), accum)
            decay = T.alloc_var(accum)

            start_state(ds_frag, warmup, is_m, v0, not is_last and n_iter > 0, cp_ds, seg,
                        use_dht != 0 and is_last, dht, n, hv, state_v_first, K, BV)

            for i in T.serial(n_iter):
                c = c_first + n_iter - 1 - i
                t0 = seq_start + c * BT
                n_valid = seq_end - t0
                # ---- the chunk's rows, zero past the sequence end; padded rows repeat the last cumsum
                for r, cc in T.Parallel(BT, K):
                    q_s[r, cc] = T.if_then_else(r < n_valid, q[T.min(t0 + r, seq_end - 1), hq, cc], T.cast(0, dtype))
                    k_s[r, cc] = T.if_then_else(r < n_valid, k[T.min(t0 + r, seq_end - 1), hq, cc], T.cast(0, dtype))
                for r, cc in T.Parallel(BT, BV):
                    do_s[r, cc] = T.if_then_else(
                        t0 + r < do_end, d_o[T.min(t0 + r, seq_end - 1), hv, v0 + cc], T.cast(0, dtype))
                for r, cc in T.Parallel(BT, BT):
                    a_s[r, cc] = T.if_then_else(r < n_valid, A[T.min(t0 + r, seq_end - 1), hv, cc], T.cast(0, dtype))
                for r in T.Parallel(BT):
                    g_s[r] = g_cumsum[T.min(t0 + r, seq_end - 1), hv]
                    b_s[r] = T.if_then_else(r < n_valid, beta[T.min(t0 + r, seq_end - 1), hv], 0.0)
                for r in T.Parallel(BT):
                    gam_s[r] = T.exp2(g_s[r] * LOG2E)
                    rr_s[r] = T.if_then_else(r < n_valid, T.exp2((g_s[BT - 1] - g_s[r]) * LOG2E), 0.0)

                # ---- dS~ and the chunk's end-state gradient by chunk slot
                T.copy(ds_frag, ds_s)
                if warmup == 0:
                    T.copy(ds_frag, dh[first_slot + c, hv, 0:K, v0:v0 + BV])

                # ---- Ag (in place over A) and Pg
                T.gemm(q_s, k_s, p_frag, transpose_B=True, clear_accum=True)
                for r, cc in T.Parallel(BT, BT):
                    gamma = T.exp2((g_s[r] - g_s[cc]) * LOG2E)  # let-bound: inside the select, a branch per element
                    gm_frag[r, cc] = T.if_then_else(r >= cc, gamma, 0.0)
                for r, cc in T.Parallel(BT, BT):
                    p_frag[r, cc] = scale * gm_frag[r, cc] * p_frag[r, cc]
                T.copy(p_frag, p_s)
                # Ag in registers, then one copy over A: the loop that read and wrote a_s got a block barrier in
                # each of its 8 unrolled steps (scripts/loop_barrier_audit.py)
                for r, cc in T.Parallel(BT, BT):
                    gm_frag[r, cc] = gm_frag[r, cc] * a_s[r, cc] * b_s[cc]
                T.copy(gm_frag, a_s)

                # ---- dVd = r * (K dS~) + Pg^T dO
                T.gemm(k_s, ds_s, dvd_frag, clear_accum=True)
                for r, cc in T.Parallel(BT, BV):
                    dvd_frag[r, cc] *= rr_s[r]
                T.gemm(p_s, do_s, dvd_frag, transpose_A=True)
                T.copy(dvd_frag, dv_s)

                # ---- dVg = -gamma * (Ag^T dVd), in place over dVd
                T.gemm(a_s, dv_s, dw_frag, transpose_A=True, clear_accum=True)
                # in registers, then one copy (a barrier per unrolled step otherwise, as above)
                for r, cc in T.Parallel(BT, BV):
                    dw_frag[r, cc] = -gam_s[r] * dw_frag[r, cc]
                T.copy(dw_frag, dv_s)

                # ---- scale * gamma * dO, in place over dO (its last reader was Pg^T dO)
                for r, cc in T.Parallel(BT, BV):
                    do_s[r, cc] = T.cast(scale * T.exp2(g_s[r] * LOG2E) * do_s[r, cc], dtype)

                # ---- dS = gamma_last * dS + Q^T (scale * gamma * dO) + K^T dVg
                decay = T.exp2(g_s[BT - 1] * LOG2E)
                for a, b in T.Parallel(K, BV):
                    ds_frag[a, b] *= decay
                T.gemm(q_s, do_s, ds_frag, transpose_A=True)
                T.gemm(k_s, dv_s, ds_frag, transpose_A=True)
                # the next chunk's loads overwrite buffers this chunk's last GEMMs read
                T.sync_threads()

            end_state(ds_frag, warmup, n_iter, cp_out, is_m, NSEG, seg, store_dh0 != 0 and is_first and n < num_seqs,
                      dh0, n, hv, v0, state_v_first, K, BV)

    return gdn_bwd_dh
