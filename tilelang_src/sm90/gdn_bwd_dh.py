"""State-gradient recurrence of the GDN backward (SM90), warp specialized.

One CTA per (sequence, v-head, BV-wide slice of V) walks the sequence's chunks from last to
first with dS = dL/dS_end [K, BV] in fp32 registers (docs/gdn_chunk_derivation.md, "Backward"):

    dh[slot]  = dS~                                   (q dtype, the chunk's end-state gradient)
    dVd = r * (K dS~) + Pg^T dO                       Pg = scale * Gamma * (Q K^T)
    dVg = -gamma * (Ag^T dVd)                         Ag = Gamma * A * beta_col
    dS  = gamma_last * dS + K^T dVg + Q^T (scale * gamma * dO)

and after the first chunk dh0 = dS. Starts from dht (the final-state gradient) or 0.
Warpgroups: WG0 holds dS and publishes dS~; WG1 computes dVd and dVg; WG2 computes Ag, Pg and
scale*gamma*dO one chunk ahead (double-buffered, off the chain); WG3: three producer warps fill a
two-stage ring (TMA when full) and a storer warp copies dS~ to dh. The chain per chunk is three GEMMs,
K dS~ -> Ag^T dVd -> K^T dVg: WG1 takes Pg^T dO, which needs no dS, before dS~ arrives. Barrier
parities as in gdn_fwd.py.

Context parallelism mirrors the forward's (docs/gdn_chunk_derivation.md, "Backward context
parallelism"): a CTA runs one segment of a sequence (rows of seg_plan.py's reverse tables), from
last chunk to first. With M_s the transition of segment s and F_s the gradient at its start
computed from zero at its end, dS_end(s) = F_{s+1} + M_{s+1}^T dS_end(s+1). The warm-up pass
(`warmup` = 1) runs, for every segment s but a sequence's last, the first chunks of segment s + 1
from dS = 0 (F_{s+1} to within exp(-10) for decaying heads, all of segment s + 1 otherwise) into
cp_out[s], and for the fallback heads all of segment s + 1 from dS = I with dO = 0, which gives
M_{s+1}^T, into cp_out[num_segs + s]; cp_correct.py (reverse) composes them into cp_ds[s], the
gradient at the end of segment s, from which the main pass starts that segment.
"""

import tilelang.language as T
from tilelang.layout import make_swizzled_layout

from common.chunk_load import load_gate_beta, load_rows
from common.chunk_store import store_state_tile
from common.grid_dependency import grid_dependency
from common.segments import end_state, grid_row, segment_row, start_state
from common.walk_dims import walk_dims

LOG2E = 1.4426950408889634


def gdn_bwd_dh_sm90(
    # task config
    dtype: str = "bfloat16",
    K: int = 128,
    V: int = 128,
    # kernel config
    BT: int = 64,
    BV: int = 64,
    # the storer warp stores dS~ to dh by TMA from its shared tile (waited for until it has read it) instead of 16-byte
    # element stores (docs/fwd_profile.md's rule). H200 (ablate.py): 2.19 -> 2.11 us per chunk at (2, 8), 2.26 -> 2.21
    # at (16, 64). On in variants.py for the sm90 family
    tma_dh: bool = False,
    # programmatic dependent launch (common/grid_dependency.py): the kernel may start while the one before it on
    # the stream finishes; every global access waits for that one's completion
    pdl: bool = False,
    # the warm-up pass's transition rows launched before its end-state rows (common/segments.py grid_row): the
    # long rows of the fallback heads in the first wave instead of the last (40th session: at (4, 8) 1x8192 the
    # backward's warm-up took 57 us on an H100 for about 32 us of work over the SMs; not yet measured)
    fallback_first: bool = False,
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
        group: T.int32,  # HV / H, from the launcher: head indices are products, never divisions
    ):
        # grid ((v-head in the group, V slice), qk-head, segment CTA): head indices are block indices and
        # products, never divisions in the 64-bit offsets TileLang re-derives in every load and store. The
        # segment row is the slowest grid index, so that a sequence's CTAs start together (sm90/gdn_fwd.py);
        # it is blockIdx.z: at most 65535 rows (checked by the op)
        with T.Kernel(group * NV, H, NGRID, threads=512) as (jv, hq, bx):
            grid_dependency(pdl)
            hv = hq * group + jv // NV
            vb = jv % NV
            v0 = vb * BV
            br = grid_row(bx, warmup, NSEG, fallback_first)  # the row this block runs
            seg = br % NSEG
            is_m = br // NSEG  # 1: a transposed-transition CTA of the warm-up pass
            num_seqs = N1 - 1

            # the segment's sequence, and the chunks this CTA runs (sm90/seg_plan.py, reverse tables); the
            # warm-up rows follow the main-pass rows; the transposed-transition CTAs load dO = 0 (up to do_end)
            n, c_first, n_iter, flags, seq_start, seq_end, do_end = segment_row(
                seg_seq, ranges, cu_seqlens, seg, T.min(warmup, 1) * NSEG + br, hv, num_seqs, num_tokens, BT)
            is_first = flags % 2 == 0  # the sequence's first segment stores dh0
            is_last = (flags // 2) % 2 == 1  # the sequence's last segment starts from dht
            first_slot = seq_start // BT + n  # docs/gdn_chunk_derivation.md, "Chunk slots"

            q_s = T.alloc_shared((2, BT, K), dtype)
            k_s = T.alloc_shared((2, BT, K), dtype)
            do_s = T.alloc_shared((2, BT, BV), dtype)
            a_s = T.alloc_shared((2, BT, BT), dtype)
            g_s = T.alloc_shared((2, BT), accum)
            b_s = T.alloc_shared((2, BT), accum)
            ds_s = T.alloc_shared((2, K, BV), dtype)  # dS~ (WG0 -> WG1, storer)
            dvd_s = T.alloc_shared((BT, BV), dtype)  # dVd (WG1 only)
            dvg_s = T.alloc_shared((BT, BV), dtype)  # dVg (WG1 -> WG0)
            # WG2 -> WG1 (Ag, Pg) and WG0 (scale * gamma * dO), one chunk ahead of the chain
            ag_s = T.alloc_shared((2, BT, BT), dtype)  # Ag
            p_s = T.alloc_shared((2, BT, BT), dtype)  # Pg
            dog_s = T.alloc_shared((2, BT, BV), dtype)  # scale * gamma * dO
            gam1_s = T.alloc_shared((BT,), accum)  # gamma (WG1)
            rr1_s = T.alloc_shared((BT,), accum)  # r (WG1)

            ds_frag = T.alloc_fragment((K, BV), accum)
            dvd_frag = T.alloc_fragment((BT, BV), accum)
            pdo_frag = T.alloc_fragment((BT, BV), accum)  # Pg^T dO (WG1)
            dw_frag = T.alloc_fragment((BT, BV), accum)
            p_frag = T.alloc_fragment((BT, BT), accum)
            gm_frag = T.alloc_fragment((BT, BT), accum)
            decay = T.alloc_var(accum)

            full = T.alloc_barrier([96, 96])
            empty = T.alloc_barrier([384, 384])
            bar_st = T.alloc_barrier([128, 128])  # dS~ written (WG0)
            ds_free = T.alloc_barrier([160, 160])  # dS~ read (WG1 and the storer warp)
            bar_ag = T.alloc_barrier([128, 128])  # Ag written (WG2)
            bar_pg = T.alloc_barrier([128, 128])  # Pg written (WG2)
            bar_dog = T.alloc_barrier([128, 128])  # scale * gamma * dO written (WG2)
            wg2_free = T.alloc_barrier([256, 256])  # Ag, Pg (WG1) and scale * gamma * dO (WG0) read
            bar_dvg = T.alloc_barrier(128)  # dVg written (WG1; single buffer: WG1 writes the next one only
            # after WG0 published the next dS~, which it does after its K^T dVg)

            # A is read only element-wise, by WG2 in the accumulator layout (8 rows per warp access): swizzled so
            # that those rows fall in different banks (row-major, they share 4); TMA writes the swizzle
            T.annotate_layout({a_s: make_swizzled_layout(a_s)})
            tx = T.get_thread_binding()

            if tx < 128:
                # ---------------- WG0: dS
                T.set_max_nreg(168, 1)
                start_state(ds_frag, warmup, is_m, v0, not is_last and n_iter > 0, cp_ds, seg,
                            use_dht != 0 and is_last, dht, n, hv, state_v_first, K, BV)
                for i in T.serial(n_iter):
                    T.barrier_wait(full[i % 2], (i // 2) % 2)
                    T.barrier_wait(ds_free[i % 2], (i // 2 + 1) % 2)
                    T.copy(ds_frag, ds_s[i % 2, :, :])
                    T.fence_proxy_async()
                    T.barrier_arrive(bar_st[i % 2])
                    decay = T.exp2(g_s[i % 2, BT - 1] * LOG2E)
                    for a, b in T.Parallel(K, BV):
                        ds_frag[a, b] *= decay
                    T.barrier_wait(bar_dog[i % 2], (i // 2) % 2)
                    # dS += Q^T (scale * gamma * dO)
                    T.gemm(q_s[i % 2, :, :], dog_s[i % 2, :, :], ds_frag, transpose_A=True)
                    T.barrier_arrive(wg2_free[i % 2])
                    T.barrier_wait(bar_dvg, i % 2)
                    # dS += K^T dVg
                    T.gemm(k_s[i % 2, :, :], dvg_s, ds_frag, transpose_A=True)
                    T.barrier_arrive(empty[i % 2])
                end_state(ds_frag, warmup, n_iter, cp_out, is_m, NSEG, seg, store_dh0 != 0 and is_first and n < num_seqs,
                          dh0, n, hv, v0, state_v_first, K, BV)

            elif tx < 256:
                # ---------------- WG1: dVd, dVg
                T.set_max_nreg(160, 1)
                for i in T.serial(n_iter):
                    c = c_first + n_iter - 1 - i
                    T.barrier_wait(full[i % 2], (i // 2) % 2)
                    n_valid = seq_end - (seq_start + c * BT)
                    for r in T.Parallel(BT):
                        gam1_s[r] = T.exp2(g_s[i % 2, r] * LOG2E)
                        rr1_s[r] = T.if_then_else(
                            r < n_valid, T.exp2((g_s[i % 2, BT - 1] - g_s[i % 2, r]) * LOG2E), 0.0)
                    # Pg^T dO before dS~ arrives: it needs no dS
                    T.barrier_wait(bar_pg[i % 2], (i // 2) % 2)
                    T.gemm(p_s[i % 2, :, :], do_s[i % 2, :, :], pdo_frag, transpose_A=True, clear_accum=True)
                    T.barrier_wait(bar_st[i % 2], (i // 2) % 2)
                    # dVd = r * (K dS~) + Pg^T dO
                    T.gemm(k_s[i % 2, :, :], ds_s[i % 2, :, :], dvd_frag, clear_accum=True)
                    T.barrier_arrive(ds_free[i % 2])
                    for r, cc in T.Parallel(BT, BV):
                        dvd_frag[r, cc] = dvd_frag[r, cc] * rr1_s[r] + pdo_frag[r, cc]
                    T.copy(dvd_frag, dvd_s)
                    T.fence_proxy_async()
                    T.barrier_wait(bar_ag[i % 2], (i // 2) % 2)
                    # dVg = -gamma * (Ag^T dVd)
                    T.gemm(ag_s[i % 2, :, :], dvd_s, dw_frag, transpose_A=True, clear_accum=True)
                    T.barrier_arrive(wg2_free[i % 2])
                    # in registers, then one copy: the fused loop (a shared read of gamma and a shared write) got a
                    # named barrier in each of its 16 iterations, on the chain (scripts/loop_barrier_audit.py)
                    for r, cc in T.Parallel(BT, BV):
                        dw_frag[r, cc] = -gam1_s[r] * dw_frag[r, cc]
                    T.copy(dw_frag, dvg_s)
                    T.fence_proxy_async()
                    T.barrier_arrive(bar_dvg)
                    T.barrier_arrive(empty[i % 2])

            elif tx < 384:
                # ---------------- WG2: Ag, Pg, scale * gamma * dO
                T.set_max_nreg(144, 1)  # 16 registers go to the producer warps
                for i in T.serial(n_iter):
                    T.barrier_wait(full[i % 2], (i // 2) % 2)
                    T.gemm(q_s[i % 2, :, :], k_s[i % 2, :, :], p_frag, transpose_B=True, clear_accum=True)
                    # Gamma's shared loads let-bound before the select (inside it they were per-element branches:
                    # 145 -> 83 shared loads in the kernel's SASS), Pg and Ag formed in registers, then copied
                    # (docs/fwd_profile.md, the chunk prep's section)
                    for r, cc in T.Parallel(BT, BT):
                        gamma = T.exp2((g_s[i % 2, r] - g_s[i % 2, cc]) * LOG2E)
                        gm_frag[r, cc] = T.if_then_else(r >= cc, gamma, 0.0)
                    for r, cc in T.Parallel(BT, BT):
                        p_frag[r, cc] = scale * gm_frag[r, cc] * p_frag[r, cc]
                    for r, cc in T.Parallel(BT, BT):
                        gm_frag[r, cc] = gm_frag[r, cc] * a_s[i % 2, r, cc] * b_s[i % 2, cc]
                    # this buffer's Ag, Pg and scale*gamma*dO (chunk i - 2) have all been read
                    T.barrier_wait(wg2_free[i % 2], (i // 2 + 1) % 2)
                    T.copy(p_frag, p_s[i % 2, :, :])
                    T.fence_proxy_async()
                    T.barrier_arrive(bar_pg[i % 2])
                    T.copy(gm_frag, ag_s[i % 2, :, :])
                    T.fence_proxy_async()
                    T.barrier_arrive(bar_ag[i % 2])
                    for r, cc in T.Parallel(BT, BV):
                        dog_s[i % 2, r, cc] = T.cast(
                            scale * T.exp2(g_s[i % 2, r] * LOG2E) * do_s[i % 2, r, cc], dtype)
                    T.fence_proxy_async()
                    T.barrier_arrive(bar_dog[i % 2])
                    T.barrier_arrive(empty[i % 2])

            else:
                # ---------------- WG3: loads, last chunk first
                T.set_max_nreg(40, 0)  # fewer spills in the loads (sm_90a: 578 -> 179 instructions)
                if tx < 384 + 32:
                    for i in T.serial(n_iter):
                        T.barrier_wait(empty[i % 2], (i // 2 + 1) % 2)
                        t0 = seq_start + (c_first + n_iter - 1 - i) * BT
                        load_rows(q, q_s, i % 2, full, t0, seq_end, hq, 0, BT, K, dtype)
                        load_rows(k, k_s, i % 2, full, t0, seq_end, hq, 0, BT, K, dtype)
                        T.barrier_arrive(full[i % 2])
                elif tx < 384 + 64:
                    for i in T.serial(n_iter):
                        T.barrier_wait(empty[i % 2], (i // 2 + 1) % 2)
                        t0 = seq_start + (c_first + n_iter - 1 - i) * BT
                        load_rows(d_o, do_s, i % 2, full, t0, do_end, hv, v0, BT, BV, dtype)
                        T.barrier_arrive(full[i % 2])
                elif tx < 384 + 96:
                    for i in T.serial(n_iter):
                        T.barrier_wait(empty[i % 2], (i // 2 + 1) % 2)
                        t0 = seq_start + (c_first + n_iter - 1 - i) * BT
                        load_rows(A, a_s, i % 2, full, t0, seq_end, hv, 0, BT, BT, dtype)
                        load_gate_beta(g_cumsum, beta, g_s, b_s, i % 2, t0, seq_end, hv, BT)
                        T.barrier_arrive(full[i % 2])
                else:
                    # the storer: dS~ of every chunk to dh, by chunk slot
                    for i in T.serial(n_iter):
                        c = c_first + n_iter - 1 - i
                        T.barrier_wait(bar_st[i % 2], (i // 2) % 2)
                        if warmup == 0:
                            store_state_tile(ds_s, i % 2, dh, first_slot + c, hv, v0, K, BV, tma_dh)
                        T.barrier_arrive(ds_free[i % 2])

    return gdn_bwd_dh
