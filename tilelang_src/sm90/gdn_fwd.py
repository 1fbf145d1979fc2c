"""Fused chunked GDN forward (SM90), warp specialized.

One CTA per (sequence, v-head, BV-wide slice of V) walks the sequence's chunks in
order with the fp32 state S [K, BV] in registers. Per chunk (docs/gdn_chunk_derivation.md,
"Per-chunk forward"), with S~ the bf16 copy of S, gamma_i = exp(gc_i),
r_i = exp(gc_last - gc_i) (0 on padded rows) and Gamma_ij = exp(gc_i - gc_j) for i >= j:

    P  = Q K^T                       Ag = Gamma * A * beta_col
    U  = K S~                        W  = V - gamma * U
    Vd = Ag W                        V' = r * Vd
    O  = scale * gamma * (Q S~) + (scale * Gamma * P) Vd
    S  = gamma_last * S + K^T V'

Warpgroups: WG0 holds S and publishes S~ (and, for the backward, stores it per chunk
slot into h); WG1 computes U, W, Vd, V'; WG2 computes P, Ag, O and stores O; WG3 loads the next chunk (TMA for full chunks, zero-filled
element copies for a sequence's last partial chunk) into a two-stage ring.
Ordering between warpgroups uses mbarriers; parity = chunk index mod 2 for the
per-chunk barriers and (chunk index / 2) mod 2 for the ring.
"""

import tilelang.language as T

from common.chunk_load import load_gate_beta, load_rows
from common.seq_index import seq_bound

LOG2E = 1.4426950408889634


def gdn_fwd_sm90(
    # task config
    dtype: str = "bfloat16",
    K: int = 128,
    V: int = 128,
    # kernel config
    BT: int = 64,
    BV: int = 64,
):
    assert V % BV == 0
    NV = V // BV
    num_tokens = T.dynamic("num_tokens")
    H = T.dynamic("num_qk_heads")
    HV = T.dynamic("num_v_heads")
    N1 = T.dynamic("num_seqs_plus_one")
    NS = T.dynamic("num_states")
    NH = T.dynamic("num_h_slots")
    accum = "float32"

    @T.prim_func
    def gdn_fwd(
        q: T.Tensor((num_tokens, H, K), dtype),
        k: T.Tensor((num_tokens, H, K), dtype),
        v: T.Tensor((num_tokens, HV, V), dtype),
        A: T.Tensor((num_tokens, HV, BT), dtype),
        g_cumsum: T.Tensor((num_tokens, HV), accum),
        beta: T.Tensor((num_tokens, HV), accum),
        cu_seqlens: T.Tensor((N1,), "int32"),
        h0: T.Tensor((NS, HV, K, V), accum),  # [N, HV, K, V], or [N, HV, V, K] if state_v_first
        o: T.Tensor((num_tokens, HV, V), dtype),
        ht: T.Tensor((NS, HV, K, V), accum),  # same layout as h0
        h: T.Tensor((NH, HV, K, V), dtype),  # S~ at the start of each chunk, by chunk slot ([K, V])
        scale: T.float32,
        use_h0: T.int32,
        store_ht: T.int32,
        state_v_first: T.int32,
        store_o: T.int32,
        store_h: T.int32,
    ):
        with T.Kernel(NV * (N1 - 1) * HV, threads=512) as (bx,):
            vb = bx % NV
            hv = (bx // NV) % HV
            n = bx // (NV * HV)
            hq = hv // (HV // H)
            v0 = vb * BV
            num_seqs = N1 - 1
            seq_start = seq_bound(cu_seqlens, n, num_tokens)
            seq_end = T.max(seq_bound(cu_seqlens, n + 1, num_tokens), seq_start)
            num_chunks = T.ceildiv(seq_end - seq_start, BT)
            first_slot = seq_start // BT + n  # docs/gdn_chunk_derivation.md, "Chunk slots"

            # ring filled by WG3
            q_s = T.alloc_shared((2, BT, K), dtype)
            k_s = T.alloc_shared((2, BT, K), dtype)
            v_s = T.alloc_shared((2, BT, BV), dtype)
            a_s = T.alloc_shared((2, BT, BT), dtype)
            g_s = T.alloc_shared((2, BT), accum)
            b_s = T.alloc_shared((2, BT), accum)
            # per-chunk exchange between the consumer warpgroups
            st_s = T.alloc_shared((K, BV), dtype)  # S~
            w_s = T.alloc_shared((BT, BV), dtype)  # W (WG1 only)
            ag_s = T.alloc_shared((BT, BT), dtype)  # Ag
            vd_s = T.alloc_shared((BT, BV), dtype)  # Vd
            vn_s = T.alloc_shared((BT, BV), dtype)  # V'
            p_s = T.alloc_shared((BT, BT), dtype)  # scale * Gamma * P (WG2 only)
            gam1_s = T.alloc_shared((BT,), accum)  # gamma (WG1)
            rr1_s = T.alloc_shared((BT,), accum)  # r (WG1)
            gam2_s = T.alloc_shared((BT,), accum)  # scale * gamma (WG2)

            s_frag = T.alloc_fragment((K, BV), accum)
            u_frag = T.alloc_fragment((BT, BV), accum)
            vd_frag = T.alloc_fragment((BT, BV), accum)
            p_frag = T.alloc_fragment((BT, BT), accum)
            gm_frag = T.alloc_fragment((BT, BT), accum)
            o_frag = T.alloc_fragment((BT, BV), accum)
            decay = T.alloc_var(accum)

            full = T.alloc_barrier([96, 96])  # 3 loader warps per stage
            empty = T.alloc_barrier([384, 384])  # 3 consumer warpgroups per stage
            bar_st = T.alloc_barrier(128)  # S~ written (WG0)
            bar_ag = T.alloc_barrier(128)  # Ag written (WG2)
            bar_vd = T.alloc_barrier(128)  # Vd written (WG1)
            bar_vn = T.alloc_barrier(128)  # V' written (WG1)
            bar_od = T.alloc_barrier(128)  # WG2 done reading S~, Vd of the chunk

            tx = T.get_thread_binding()

            if tx < 128:
                # ---------------- WG0: the state
                T.set_max_nreg(168, 1)
                if use_h0 != 0:
                    if state_v_first != 0:
                        for a, b in T.Parallel(K, BV):
                            s_frag[a, b] = h0[n, hv, v0 + b, a]
                    else:
                        T.copy(h0[n, hv, 0:K, v0:v0 + BV], s_frag)
                else:
                    T.clear(s_frag)
                for i in T.serial(num_chunks):
                    T.barrier_wait(full[i % 2], (i // 2) % 2)
                    if i > 0:
                        T.barrier_wait(bar_od, (i - 1) % 2)
                    T.copy(s_frag, st_s)
                    T.fence_proxy_async()
                    T.barrier_arrive(bar_st)
                    if store_h != 0:
                        T.copy(s_frag, h[first_slot + i, hv, 0:K, v0:v0 + BV])
                    decay = T.exp2(g_s[i % 2, BT - 1] * LOG2E)
                    for a, b in T.Parallel(K, BV):
                        s_frag[a, b] *= decay
                    T.barrier_wait(bar_vn, i % 2)
                    # S += K^T V'
                    T.gemm(k_s[i % 2, :, :], vn_s, s_frag, transpose_A=True)
                    T.barrier_arrive(empty[i % 2])
                if store_ht != 0:
                    if state_v_first != 0:
                        for a, b in T.Parallel(K, BV):
                            ht[n, hv, v0 + b, a] = s_frag[a, b]
                    else:
                        T.copy(s_frag, ht[n, hv, 0:K, v0:v0 + BV])

            elif tx < 256:
                # ---------------- WG1: U, W, Vd, V'
                T.set_max_nreg(160, 1)
                for i in T.serial(num_chunks):
                    T.barrier_wait(full[i % 2], (i // 2) % 2)
                    n_valid = seq_end - (seq_start + i * BT)
                    for r in T.Parallel(BT):
                        gam1_s[r] = T.exp2(g_s[i % 2, r] * LOG2E)
                        rr1_s[r] = T.if_then_else(
                            r < n_valid, T.exp2((g_s[i % 2, BT - 1] - g_s[i % 2, r]) * LOG2E), 0.0)
                    T.barrier_wait(bar_st, i % 2)
                    # U = K S~
                    T.gemm(k_s[i % 2, :, :], st_s, u_frag, clear_accum=True)
                    for r, c in T.Parallel(BT, BV):
                        w_s[r, c] = v_s[i % 2, r, c] - gam1_s[r] * u_frag[r, c]
                    T.fence_proxy_async()
                    T.barrier_wait(bar_ag, i % 2)
                    # Vd = Ag W
                    T.gemm(ag_s, w_s, vd_frag, clear_accum=True)
                    T.copy(vd_frag, vd_s)
                    T.fence_proxy_async()
                    T.barrier_arrive(bar_vd)
                    for r, c in T.Parallel(BT, BV):
                        vd_frag[r, c] *= rr1_s[r]
                    T.copy(vd_frag, vn_s)
                    T.fence_proxy_async()
                    T.barrier_arrive(bar_vn)
                    T.barrier_arrive(empty[i % 2])

            elif tx < 384:
                # ---------------- WG2: P, Ag, O
                T.set_max_nreg(160, 1)
                for i in T.serial(num_chunks):
                    T.barrier_wait(full[i % 2], (i // 2) % 2)
                    t0 = seq_start + i * BT
                    # P = Q K^T
                    T.gemm(q_s[i % 2, :, :], k_s[i % 2, :, :], p_frag, transpose_B=True, clear_accum=True)
                    for r in T.Parallel(BT):
                        gam2_s[r] = scale * T.exp2(g_s[i % 2, r] * LOG2E)
                    for r, c in T.Parallel(BT, BT):
                        gm_frag[r, c] = T.if_then_else(
                            r >= c, T.exp2((g_s[i % 2, r] - g_s[i % 2, c]) * LOG2E), 0.0)
                    for r, c in T.Parallel(BT, BT):
                        ag_s[r, c] = T.cast(gm_frag[r, c] * a_s[i % 2, r, c] * b_s[i % 2, c], dtype)
                    T.fence_proxy_async()
                    T.barrier_arrive(bar_ag)
                    for r, c in T.Parallel(BT, BT):
                        p_frag[r, c] *= scale * gm_frag[r, c]
                    T.copy(p_frag, p_s)
                    T.fence_proxy_async()
                    T.barrier_wait(bar_st, i % 2)
                    # O = scale * gamma * (Q S~)
                    T.gemm(q_s[i % 2, :, :], st_s, o_frag, clear_accum=True)
                    for r, c in T.Parallel(BT, BV):
                        o_frag[r, c] *= gam2_s[r]
                    T.barrier_wait(bar_vd, i % 2)
                    # O += Pg Vd
                    T.gemm(p_s, vd_s, o_frag)
                    T.barrier_arrive(bar_od)
                    if store_o != 0:
                        if t0 + BT <= seq_end:
                            T.copy(o_frag, o[t0:t0 + BT, hv, v0:v0 + BV])
                        else:
                            for r, c in T.Parallel(BT, BV):
                                if t0 + r < seq_end:
                                    o[t0 + r, hv, v0 + c] = T.cast(o_frag[r, c], dtype)
                    T.barrier_arrive(empty[i % 2])
                # the last sequence's CTAs zero the padding tail [cu[N], T)
                if store_o != 0 and n == num_seqs - 1:
                    for blk in T.serial(T.ceildiv(num_tokens - seq_end, BT)):
                        for r, c in T.Parallel(BT, BV):
                            if seq_end + blk * BT + r < num_tokens:
                                o[seq_end + blk * BT + r, hv, v0 + c] = T.cast(0, dtype)

            else:
                # ---------------- WG3: loads
                T.set_max_nreg(24, 0)
                if tx < 384 + 32:
                    for i in T.serial(num_chunks):
                        T.barrier_wait(empty[i % 2], (i // 2 + 1) % 2)
                        t0 = seq_start + i * BT
                        load_rows(q, q_s, i % 2, full, t0, seq_end, hq, 0, BT, K, dtype)
                        load_rows(k, k_s, i % 2, full, t0, seq_end, hq, 0, BT, K, dtype)
                        T.barrier_arrive(full[i % 2])
                elif tx < 384 + 64:
                    for i in T.serial(num_chunks):
                        T.barrier_wait(empty[i % 2], (i // 2 + 1) % 2)
                        t0 = seq_start + i * BT
                        load_rows(v, v_s, i % 2, full, t0, seq_end, hv, v0, BT, BV, dtype)
                        T.barrier_arrive(full[i % 2])
                elif tx < 384 + 96:
                    for i in T.serial(num_chunks):
                        T.barrier_wait(empty[i % 2], (i // 2 + 1) % 2)
                        t0 = seq_start + i * BT
                        load_rows(A, a_s, i % 2, full, t0, seq_end, hv, 0, BT, BT, dtype)
                        load_gate_beta(g_cumsum, beta, g_s, b_s, i % 2, t0, seq_end, hv, BT)
                        T.barrier_arrive(full[i % 2])

    return gdn_fwd
