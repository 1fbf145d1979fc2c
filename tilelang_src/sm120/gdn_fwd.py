"""Fused chunked GDN forward for consumer Blackwell (sm_120a): the math of sm90/gdn_fwd.py in one
thread block without warp specialization, within the 99 KB of shared memory per block.

One CTA per (segment, v-head, BV-wide slice of V) walks the segment's chunks in order with the
fp32 state S [K, BV] in registers; segments, the warm-up pass and the tables that describe them are
those of sm90/gdn_fwd.py (docs/gdn_chunk_derivation.md, "Segments", "Context parallelism").
Per chunk (docs/gdn_chunk_derivation.md, "Per-chunk forward"), with S~ the q-dtype copy of S,
gamma_i = exp(gc_i), r_i = exp(gc_last - gc_i) (0 on padded rows) and Gamma_ij = exp(gc_i - gc_j) for i >= j:

    P  = Q K^T                       Ag = Gamma * A * beta_col
    U  = K S~                        W  = V - gamma * U
    Vd = Ag W                        V' = r * Vd
    O  = scale * gamma * (Q S~) + (scale * Gamma * P) Vd
    S  = gamma_last * S + K^T V'

All threads run every step; TileLang places the block barriers between shared-memory writes and
reads. Loads are element copies, zero past the sequence end (no TMA, no mbarriers). Buffers are
reused in place where a value dies: A becomes Ag, V becomes W and then V'. Same prim_func
signature as sm90/gdn_fwd.py, so both lower to the same launcher.
"""

import tilelang.language as T

from common.chunk_store import zero_padding_tail
from common.segments import end_state, segment_row, start_state
from common.walk_dims import walk_dims

LOG2E = 1.4426950408889634


def gdn_fwd_sm120(
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
    def gdn_fwd(
        q: T.Tensor((num_tokens, H, K), dtype),
        k: T.Tensor((num_tokens, H, K), dtype),
        v: T.Tensor((num_tokens, HV, V), dtype),
        A: T.Tensor((num_tokens, HV, BT), dtype),
        z: T.Tensor((num_tokens, HV, BT), dtype),  # the chunk prep's Z: unused here (this kernel forms it)
        g_cumsum: T.Tensor((num_tokens, HV), accum),
        beta: T.Tensor((num_tokens, HV), accum),
        cu_seqlens: T.Tensor((N1,), "int32"),
        h0: T.Tensor((NS, HV, K, V), accum),  # [N, HV, K, V], or [N, HV, V, K] if state_v_first
        o: T.Tensor((num_tokens, HV, V), dtype),
        ht: T.Tensor((NS, HV, K, V), accum),  # same layout as h0
        h: T.Tensor((NH, HV, K, V), dtype),  # S~ at the start of each chunk, by chunk slot ([K, V])
        seg_seq: T.Tensor((NSEG,), "int32"),  # the sequence of every segment slot (N: padding)
        ranges: T.Tensor((NROWS, HV, 3), "int32"),  # (first chunk, count, flags) per CTA row
        cp_h0: T.Tensor((NSEG, HV, K, V), accum),  # start state of a sequence's later segments (main pass)
        cp_out: T.Tensor((NGRID, HV, K, V), accum),  # warm-up end states, then transition matrices
        scale: T.float32,
        use_h0: T.int32,
        store_ht: T.int32,
        state_v_first: T.int32,
        store_o: T.int32,
        store_h: T.int32,
        warmup: T.int32,
        group: T.int32,  # HV / H (the SM90 launchers' argument; unused here)
    ):
        with T.Kernel(NV * HV * NGRID, threads=threads) as (bx,):
            vb = bx % NV
            hv = (bx // NV) % HV
            seg = (bx // (NV * HV)) % NSEG
            is_m = bx // (NV * HV * NSEG)  # 1: a transition-matrix CTA of the warm-up pass
            hq = hv // (HV // H)
            v0 = vb * BV
            num_seqs = N1 - 1
            # the segment's sequence, and the chunks this CTA runs (sm90/seg_plan.py); the warm-up rows follow
            # the main-pass rows; the transition-matrix CTAs load V = 0 (up to v_end)
            n, c_first, num_chunks, flags, seq_start, seq_end, v_end = segment_row(
                seg_seq, ranges, cu_seqlens, seg, warmup * NSEG + bx // (NV * HV), hv, num_seqs, num_tokens, BT)
            has_prev = flags % 2 == 1  # start from cp_h0: not the sequence's first segment
            is_last = (flags // 2) % 2 == 1  # the sequence's last segment stores the final state
            first_slot = seq_start // BT + n  # docs/gdn_chunk_derivation.md, "Chunk slots"

            q_s = T.alloc_shared((BT, K), dtype)
            k_s = T.alloc_shared((BT, K), dtype)
            a_s = T.alloc_shared((BT, BT), dtype)  # A, then Ag in place
            w_s = T.alloc_shared((BT, BV), dtype)  # V, then W in place, then V'
            g_s = T.alloc_shared((BT,), accum)
            b_s = T.alloc_shared((BT,), accum)
            gam_s = T.alloc_shared((BT,), accum)  # gamma
            gam_o_s = T.alloc_shared((BT,), accum)  # scale * gamma
            rr_s = T.alloc_shared((BT,), accum)  # r
            st_s = T.alloc_shared((K, BV), dtype)  # S~
            p_s = T.alloc_shared((BT, BT), dtype)  # scale * Gamma * P
            vd_s = T.alloc_shared((BT, BV), dtype)  # Vd

            s_frag = T.alloc_fragment((K, BV), accum)
            acc = T.alloc_fragment((BT, BV), accum)  # U, then Vd and V'
            p_frag = T.alloc_fragment((BT, BT), accum)
            gm_frag = T.alloc_fragment((BT, BT), accum)
            o_frag = T.alloc_fragment((BT, BV), accum)
            decay = T.alloc_var(accum)

            start_state(s_frag, warmup, is_m, v0, has_prev and num_chunks > 0, cp_h0, seg,
                        use_h0 != 0 and n < num_seqs, h0, n, hv, state_v_first, K, BV)

            for i in T.serial(num_chunks):
                t0 = seq_start + (c_first + i) * BT
                n_valid = seq_end - t0
                # ---- the chunk's rows, zero past the sequence end (the next sequence's rows are never read);
                # the cumsum of padded rows repeats the last real value, so gamma_last is the true decay
                for r, c in T.Parallel(BT, K):
                    q_s[r, c] = T.if_then_else(r < n_valid, q[T.min(t0 + r, seq_end - 1), hq, c], T.cast(0, dtype))
                    k_s[r, c] = T.if_then_else(r < n_valid, k[T.min(t0 + r, seq_end - 1), hq, c], T.cast(0, dtype))
                for r, c in T.Parallel(BT, BV):
                    w_s[r, c] = T.if_then_else(t0 + r < v_end, v[T.min(t0 + r, seq_end - 1), hv, v0 + c],
                                               T.cast(0, dtype))
                for r, c in T.Parallel(BT, BT):
                    a_s[r, c] = T.if_then_else(r < n_valid, A[T.min(t0 + r, seq_end - 1), hv, c], T.cast(0, dtype))
                for r in T.Parallel(BT):
                    g_s[r] = g_cumsum[T.min(t0 + r, seq_end - 1), hv]
                    b_s[r] = T.if_then_else(r < n_valid, beta[T.min(t0 + r, seq_end - 1), hv], 0.0)
                for r in T.Parallel(BT):
                    gam_s[r] = T.exp2(g_s[r] * LOG2E)
                    gam_o_s[r] = scale * T.exp2(g_s[r] * LOG2E)
                    rr_s[r] = T.if_then_else(r < n_valid, T.exp2((g_s[BT - 1] - g_s[r]) * LOG2E), 0.0)

                # ---- S~ (and, for the backward, the chunk's start state by chunk slot)
                T.copy(s_frag, st_s)
                if store_h != 0 and warmup == 0:
                    T.copy(s_frag, h[first_slot + c_first + i, hv, 0:K, v0:v0 + BV])

                # ---- P = Q K^T;  Ag = Gamma * A * beta_col;  p_s = scale * Gamma * P
                T.gemm(q_s, k_s, p_frag, transpose_B=True, clear_accum=True)
                for r, c in T.Parallel(BT, BT):
                    gamma = T.exp2((g_s[r] - g_s[c]) * LOG2E)  # let-bound: inside the select, a branch per element
                    gm_frag[r, c] = T.if_then_else(r >= c, gamma, 0.0)
                for r, c in T.Parallel(BT, BT):
                    p_frag[r, c] *= scale * gm_frag[r, c]
                T.copy(p_frag, p_s)
                # Ag in registers, then one copy over A: the loop that read and wrote a_s got a block barrier in
                # each of its 8 unrolled steps (scripts/loop_barrier_audit.py)
                for r, c in T.Parallel(BT, BT):
                    gm_frag[r, c] = gm_frag[r, c] * a_s[r, c] * b_s[c]
                T.copy(gm_frag, a_s)

                # ---- U = K S~;  W = V - gamma * U;  Vd = Ag W;  V' = r * Vd
                T.gemm(k_s, st_s, acc, clear_accum=True)
                # W in registers, then one copy over V (a barrier per step otherwise, as above)
                for r, c in T.Parallel(BT, BV):
                    acc[r, c] = w_s[r, c] - gam_s[r] * acc[r, c]
                T.copy(acc, w_s)
                T.gemm(a_s, w_s, acc, clear_accum=True)
                T.copy(acc, vd_s)
                for r, c in T.Parallel(BT, BV):
                    acc[r, c] *= rr_s[r]
                T.copy(acc, w_s)

                # ---- O = scale * gamma * (Q S~) + Pg Vd
                T.gemm(q_s, st_s, o_frag, clear_accum=True)
                for r, c in T.Parallel(BT, BV):
                    o_frag[r, c] *= gam_o_s[r]
                T.gemm(p_s, vd_s, o_frag)
                if store_o != 0 and warmup == 0:
                    for r, c in T.Parallel(BT, BV):
                        if r < n_valid:
                            o[t0 + r, hv, v0 + c] = T.cast(o_frag[r, c], dtype)

                # ---- S = gamma_last * S + K^T V'
                decay = T.exp2(g_s[BT - 1] * LOG2E)
                for a, b in T.Parallel(K, BV):
                    s_frag[a, b] *= decay
                T.gemm(k_s, w_s, s_frag, transpose_A=True)
                # the next chunk's loads overwrite buffers this chunk's last GEMMs read
                T.sync_threads()

            end_state(s_frag, warmup, num_chunks, cp_out, is_m, NSEG, seg, store_ht != 0 and is_last, ht, n, hv, v0,
                      state_v_first, K, BV)
            # the last sequence's last segment zeroes the padding tail [cu[N], T)
            if store_o != 0 and warmup == 0 and is_last and n == num_seqs - 1:
                zero_padding_tail(o, seq_end, num_tokens, hv, v0, BT, BV, dtype)

    return gdn_fwd
