"""Fused chunked GDN forward (SM90) with the state as the register operand of its products ("rs").

The same walk as gdn_fwd.py (one CTA per segment, v-head and V slice, the segment-plan tables, the chunk prep's A and
Z, the warm-up pass), written transposed: the state lives as S^T [BV, K] (fp32) in the registers of the math
warpgroups, each holding 64 V rows, and S~^T = bf16(S^T) and W^T never leave the registers: they are the A operands of
register-sourced wgmma (RS), with K, Q, X and Z the shared-memory B operands. Per chunk, with the quantities of
gdn_fwd.py (docs/gdn_chunk_derivation.md, "Two-GEMM chain"):

    SK  = S~^T K^T                      [V, BT]   (= U^T)
    W^T = V^T - SK diag(gamma)          [V, BT]
    S^T = gamma_last * S^T + W^T X      [V, K]    (the chain: SK, then W^T X)
    O^T = (S~^T Q^T) diag(scale * gamma) + W^T Z^T

so the chain has no shared-memory round trip (gdn_fwd.py writes S~ and W to shared memory and crosses warpgroups
twice per chunk) and no barrier between warpgroups: each math warpgroup runs its 64 V rows from S~ to the state update
itself. docs/fwd_rs.md: the design, the schedule of the waits, and FlashInfer's Hopper kernel it borrows the
transposed register form from (whose chain is three products: it applies the inverse to the residual on the chain).

Warpgroups: the math warpgroups (two at BV = 128, one at 64; one macro, math_half); then X's warpgroup, which forms
X = diag(r * beta) A^T K and the per-row gates of each chunk a ring stage ahead; then three producer warps that fill
a two-stage ring by TMA (element copies for a partial chunk) and a storer warp that stores O from a two-stage buffer
(TMA for a full chunk). O's products run under the chain's other work: O1 = S~^T Q^T under W^T, O2 = W^T Z^T under the
next chunk's S~^T and SK, and chunk i's O is handed to the storer once chunk i + 1's SK is done.

With z_in_x, X's warpgroup also forms Z = (scale Gamma * (Q K^T)) (Gamma * A * beta_col) from the ring's Q, K, A and
gates (the chunk prep then reads no Q and stores no Z: chunk_prep.py form_z=False), so that the prep and this kernel
move 512 fewer bytes per token and v-head; measured twice as slow, off (docs/fwd_rs.md, "Measured").

With a_in_x, X's warpgroup forms A itself from the ring's K and beta (K K^T by wgmma, then the chunk prep's
blockwise solve, common/unit_lower_inverse.py) instead of loading the prep's: a measure of whether the warpgroup that
forms X has room for the inverse as well, the first step of a forward without the prep (docs/speed_plan.md, Ready 1).

Not here: the chunk states for the backward (store_h; csrc/ops/gdn_common.cpp keeps gdn_fwd.py for them).
"""

import tilelang.language as T
from tilelang.layout import make_swizzled_layout

from common.chunk_gates import gate_a, scale_gamma
from common.chunk_load import load_gate_beta, load_rows
from common.chunk_store import store_o_walk, zero_padding_tail
from common.grid_dependency import grid_dependency
from common.seq_index import seq_bound
from common.state_walk import load_start_state, store_end_state
from common.unit_lower_inverse import diag8_blocks, mma_level1_merge, tc_level2_merge
from common.walk_dims import walk_dims

LOG2E = 1.4426950408889634
ROW_PAD = 4  # floats of padding per row of the inverse's fp32 matrices (as in chunk_prep.py)


def gdn_fwd_rs_sm90(
    # task config
    dtype: str = "bfloat16",
    K: int = 128,
    V: int = 128,
    # kernel config
    BT: int = 64,
    # the V slice of a CTA: 128 (one CTA per segment and v-head, two math warpgroups) or 64 (two CTAs, one math
    # warpgroup each: for calls with few heads and sequences, context parallelism's segments)
    BV: int = 128,
    # registers per thread: the math warpgroups (S^T 64, S~^T 32, SK 32, O 32, W^T 16), X's warpgroup (X in two
    # 64-column halves), the producer and storer warps; their sum over the warpgroups at most 512
    regs: tuple = (208, 64, 32),
    # X's warpgroup forms Z itself (P = Q K^T, Pg and Ag through shared memory, Z = Pg Ag by wgmma) into a buffer per
    # ring stage instead of the producers loading the prep's Z (chunk_prep.py form_z=False goes with it)
    z_in_x: bool = False,
    # the ring in two barrier groups: K, V, A and the gates (kv: the chain's and X's inputs) and Q, Z (qz: O's). With
    # early_release the math warpgroups free a stage's kv group once W^T is formed (SK has read K, W^T V and the
    # decay g), so the producers load chunk i + 2's K, V, A a chunk earlier than when the whole stage waits for chunk
    # i's O2 (at chunk i + 1's SK); qz is freed there as before
    early_release: bool = False,
    # X's warpgroup forms A = (I + strictLower(diag(beta) K K^T))^-1 itself (K K^T by wgmma, the chunk prep's blockwise
    # solve: common/unit_lower_inverse.py, the same steps and operands, so the same bits) instead of the producers
    # loading the prep's A: a measure of whether the warpgroup that forms X can take the inverse too, the first step
    # of a forward without the prep (docs/speed_plan.md, Ready 1). X's warpgroup needs at least 104 registers: at BV =
    # 128 with sk_halves and 192 / 104 / 24 (the 35 KB of the solve's fp32 matrices fit beside a one-buffer A)
    a_in_x: bool = False,
    # SK in two 32-column halves, one after the other (the second queued behind O1), each half's W^T columns formed
    # from it: 16 registers of SK live instead of 32 (160 at the math warpgroups' peak instead of 176), for the math
    # warpgroups at fewer than 208 registers (at 200 and 192 ptxas serializes the kernel's wgmma without it, C7512),
    # which would leave room for an auxiliary warpgroup (docs/speed_plan.md, Ready 1 (a)); the chain gains a wait
    sk_halves: bool = False,
    # both math warpgroups on one code path over 128-row fragments (the products split by rows) instead of math_half
    # emitted once per warpgroup: half the math warpgroups' code (gdn_fwd_noprep.py's math_pair, for the instruction
    # fetch stalls). Needs common/fence_fix.py's rewrite of the generated code (TileLang 0.1.15 fences twice a
    # two-warpgroup accumulator), which codegen.py and ablate.py register. Written in the 34th session, not yet run
    math_pair: bool = False,
    # programmatic dependent launch (common/grid_dependency.py)
    pdl: bool = False,
):
    assert BV in (64, 128) and V == 128 and K == 128 and BT == 64
    NV = V // BV
    VH = 64  # a math warpgroup's V rows
    NMATH = BV // VH  # math warpgroups
    NREG_MATH, NREG_X, NREG_LOAD = regs
    assert NMATH * NREG_MATH + NREG_X + NREG_LOAD <= 512
    assert not a_in_x or NREG_X >= 104, "a_in_x: X's warpgroup holds K K^T (32 registers) and the solve's fragments"
    assert not (a_in_x and z_in_x), "z_in_x reads the ring's A"
    assert not math_pair or BV == 128, "math_pair: two math warpgroups"
    PT = 128 * (NMATH + 1)  # the producer warps' first thread
    KH = K // 2  # X's column half
    num_tokens, H, HV, N1, NS, NH, NSEG, NGRID, NROWS = walk_dims()  # common/walk_dims.py
    accum = "float32"

    @T.macro
    def store_o_stage(o_frag, o_s, o_full, o_free, j, v0, rows):
        """O^T of chunk j (its products done) into columns [v0, v0 + rows) of o_s[j % 2], for the storer warp, once
        it stored chunk j - 2's"""
        T.barrier_wait(o_free[j % 2], (j // 2 + 1) % 2)
        for a, t in T.Parallel(rows, BT):
            o_s[j % 2, t, v0 + a] = o_frag[a, t]
        T.fence_proxy_async()
        T.barrier_arrive(o_full[j % 2])

    @T.macro
    def release_chunk(o_frag, o_s, empty_kv, empty_qz, x_free, o_full, o_free, j, v0, emit_o, rows):
        """Chunk j's products are done: its ring stage (the qz group, and the kv group unless early_release freed it at
        W^T) and its X are free, and its O^T goes to the storer warp"""
        if not early_release:
            T.barrier_arrive(empty_kv[j % 2])
        T.barrier_arrive(empty_qz[j % 2])
        T.barrier_arrive(x_free[j % 2])
        if emit_o:
            store_o_stage(o_frag, o_s, o_full, o_free, j, v0, rows)

    @T.macro
    def math_half(vh, rows, pol, c0, s_frag, st_frag, sk_frag, wt_frag, o_frag, q_s, k_s, v_s, zr_s, g_s, x_s, gam_s,
                  gam2_s, o_s, full_kv, empty_kv, full_qz, empty_qz, x_ready, x_free, o_full, o_free, h0, cp_h0, cp_out,
                  ht, hv, seg, n, is_m, n_iter, flags, use_h0, state_v_first, store_ht, emit_o, warmup, num_seqs):
        """One math warpgroup's walk over the segment: S^T of the CTA's V rows [v0, v0 + 64), v0 = 64 * vh (V rows
        c0 + v0 ... of the head); with math_pair both warpgroups' walk on one code path (vh = 0, rows = 128, the
        products split by rows: pol)"""
        v0 = vh * VH
        vg = c0 + v0
        has_prev = flags % 2 == 1  # start from cp_h0: not the sequence's first segment
        is_last = (flags // 2) % 2 == 1  # the sequence's last segment stores the final state
        load_start_state(s_frag, rows, K, vg, hv, seg, n, is_m, n_iter, has_prev, warmup, use_h0, num_seqs,
                         state_v_first, h0, cp_h0)
        # Every product is issued on every path (O's too when no o is stored: its results are dropped), and every
        # wait is a wait for all: ptxas serializes every wgmma of the kernel (C7514) where an accumulator is read
        # after a partial wait that follows a group left in flight across the loop's back edge. The chain needs SK
        # whole anyway, and whatever was issued before SK (chunk i - 1's O2) completes before it
        for i in T.serial(n_iter):
            T.barrier_wait(full_kv[i % 2], (i // 2) % 2)
            T.barrier_wait(x_ready[i % 2], (i // 2) % 2)
            T.copy(s_frag, st_frag)
            # SK = S~^T K^T (with sk_halves its first 32 columns)
            if sk_halves:
                T.wgmma_gemm(st_frag, k_s[i % 2, 0:BT // 2, :], sk_frag, transpose_B=True, clear_accum=True, policy=pol)
            else:
                T.wgmma_gemm(st_frag, k_s[i % 2, :, :], sk_frag, transpose_B=True, clear_accum=True, policy=pol)
            T.wait_wgmma(0)  # SK, and chunk i - 1's O2
            if i > 0:
                release_chunk(o_frag, o_s, empty_kv, empty_qz, x_free, o_full, o_free, i - 1, v0, emit_o, rows)
            # O1 = S~^T Q^T, under W
            T.barrier_wait(full_qz[i % 2], (i // 2) % 2)
            T.wgmma_gemm(st_frag, q_s[i % 2, :, :], o_frag, transpose_B=True, clear_accum=True, policy=pol)
            decay = T.exp2(g_s[i % 2, BT - 1] * LOG2E)
            for a, b in T.Parallel(rows, K):
                s_frag[a, b] *= decay
            # W^T = V^T - SK diag(gamma)
            if sk_halves:
                for a, t in T.Parallel(rows, BT // 2):
                    wt_frag[a, t] = v_s[i % 2, t, v0 + a] - gam_s[i % 2, t] * sk_frag[a, t]
                T.wgmma_gemm(st_frag, k_s[i % 2, BT // 2:BT, :], sk_frag, transpose_B=True, clear_accum=True,
                             policy=pol)
                T.wait_wgmma(0)  # O1 and SK's second half
                for a, t in T.Parallel(rows, BT // 2):
                    wt_frag[a, BT // 2 + t] = (v_s[i % 2, BT // 2 + t, v0 + a]
                                               - gam_s[i % 2, BT // 2 + t] * sk_frag[a, t])
            else:
                for a, t in T.Parallel(rows, BT):
                    wt_frag[a, t] = v_s[i % 2, t, v0 + a] - gam_s[i % 2, t] * sk_frag[a, t]
            if early_release:
                T.barrier_arrive(empty_kv[i % 2])  # K (SK), V and g read
            # S^T += W^T X
            T.wgmma_gemm(wt_frag, x_s[i % 2, :, :], s_frag, policy=pol)
            T.wait_wgmma(0)  # O1 and the update
            for a, t in T.Parallel(rows, BT):
                o_frag[a, t] *= gam2_s[i % 2, t]
            # O^T += W^T Z^T, under the next chunk's S~ and SK
            T.wgmma_gemm(wt_frag, zr_s[i % 2, :, :], o_frag, transpose_B=True, policy=pol)
        T.wait_wgmma(0)
        if n_iter > 0:
            release_chunk(o_frag, o_s, empty_kv, empty_qz, x_free, o_full, o_free, n_iter - 1, v0, emit_o, rows)
        store_end_state(s_frag, rows, K, vg, hv, seg, n, is_m, n_iter, is_last, warmup, store_ht, state_v_first, NSEG,
                        cp_out, ht)

    @T.prim_func
    def gdn_fwd_rs(
        q: T.Tensor((num_tokens, H, K), dtype),
        k: T.Tensor((num_tokens, H, K), dtype),
        v: T.Tensor((num_tokens, HV, V), dtype),
        A: T.Tensor((num_tokens, HV, BT), dtype),
        z: T.Tensor((num_tokens, HV, BT), dtype),  # read only when o is stored without z_in_x
        g_cumsum: T.Tensor((num_tokens, HV), accum),
        beta: T.Tensor((num_tokens, HV), accum),
        cu_seqlens: T.Tensor((N1,), "int32"),
        h0: T.Tensor((NS, HV, K, V), accum),  # [N, HV, K, V], or [N, HV, V, K] if state_v_first
        o: T.Tensor((num_tokens, HV, V), dtype),
        ht: T.Tensor((NS, HV, K, V), accum),  # same layout as h0
        h: T.Tensor((NH, HV, K, V), dtype),  # unused here (store_h must be 0): the launcher signature of gdn_fwd
        seg_seq: T.Tensor((NSEG,), "int32"),  # the sequence of every segment slot (N: padding)
        ranges: T.Tensor((NROWS, HV, 3), "int32"),  # (first chunk, count, flags) per CTA row
        cp_h0: T.Tensor((NSEG, HV, K, V), accum),  # start state of every segment j > 0 (main pass), [K, V]
        cp_out: T.Tensor((NGRID, HV, K, V), accum),  # warm-up end states, then transition matrices, [K, V]
        scale: T.float32,
        use_h0: T.int32,
        store_ht: T.int32,
        state_v_first: T.int32,
        store_o: T.int32,
        store_h: T.int32,
        warmup: T.int32,
        group: T.int32,  # HV / H, from the launcher: head indices are products, never divisions
    ):
        # grid ((v-head in the group, V slice), qk-head, segment CTA), as gdn_fwd.py's
        with T.Kernel(group * NV, H, NGRID, threads=PT + 128) as (jv, hq, bx):
            grid_dependency(pdl)
            hv = hq * group + jv // NV
            c0 = (jv % NV) * BV  # the CTA's V slice
            seg = bx % NSEG
            is_m = bx // NSEG  # 1: a transition-matrix CTA of the warm-up pass
            num_seqs = N1 - 1

            n = seg_seq[seg]
            row = T.min(warmup, 1) * NSEG + bx  # warm-up rows follow the main-pass rows (warmup 1 or 2)
            c_first = ranges[row, hv, 0]
            n_iter = ranges[row, hv, 1]
            flags = ranges[row, hv, 2]
            is_last = (flags // 2) % 2 == 1  # the sequence's last segment stores the final state
            seq_start = seq_bound(cu_seqlens, n, num_tokens)
            seq_end = T.max(seq_bound(cu_seqlens, T.min(n + 1, num_seqs), num_tokens), seq_start)
            v_end = seq_end - (flags // 4) * (seq_end + BT)  # the transition-matrix CTAs load V = 0
            emit_o = store_o != 0 and warmup == 0

            # ring filled by the producer warps
            q_s = T.alloc_shared((2, BT, K), dtype)
            k_s = T.alloc_shared((2, BT, K), dtype)
            v_s = T.alloc_shared((2, BT, BV), dtype)
            if not a_in_x:
                a_s = T.alloc_shared((2, BT, BT), dtype)
            if not z_in_x:
                zr_s = T.alloc_shared((2, BT, BT), dtype)  # Z (only when o is stored)
            g_s = T.alloc_shared((2, BT), accum)
            b_s = T.alloc_shared((2, BT), accum)
            # X's warpgroup -> math, per ring stage
            x_s = T.alloc_shared((2, BT, K), dtype)  # X
            gam_s = T.alloc_shared((2, BT), accum)  # gamma
            gam2_s = T.alloc_shared((2, BT), accum)  # scale * gamma
            rb_s = T.alloc_shared((BT,), accum)  # r * beta (X's warpgroup only)
            if z_in_x:
                zr_s = T.alloc_shared((2, BT, BT), dtype)  # Z, per ring stage (X's warpgroup -> math)
                pg_s = T.alloc_shared((BT, BT), dtype)  # scale * Gamma * (Q K^T) (X's warpgroup only)
                ag_s = T.alloc_shared((BT, BT), dtype)  # Gamma * A * beta_col (X's warpgroup only)
            # math -> storer
            o_s = T.alloc_shared((2, BT, BV), dtype)

            # per math warpgroup (its 64 V rows): S^T, S~^T (the A operand of SK and O1), SK, W^T (the A operand of
            # the update and O2), O^T. Two warpgroups with their own 64-row fragments, each issuing its own products:
            # TileLang 0.1.15 fences the registers of a 256-thread RS product as if one warpgroup held the whole
            # fragment (twice the array: out of bounds). The second set is unused (no registers) at BV = 64
            s0 = T.alloc_fragment((VH, K), accum)
            st0 = T.alloc_fragment((VH, K), dtype)
            SKW = BT // 2 if sk_halves else BT  # SK's columns at a time
            sk0 = T.alloc_fragment((VH, SKW), accum)
            wt0 = T.alloc_fragment((VH, BT), dtype)
            o0 = T.alloc_fragment((VH, BT), accum)
            s1 = T.alloc_fragment((VH, K), accum)
            st1 = T.alloc_fragment((VH, K), dtype)
            sk1 = T.alloc_fragment((VH, SKW), accum)
            wt1 = T.alloc_fragment((VH, BT), dtype)
            o1 = T.alloc_fragment((VH, BT), accum)
            # math_pair: both math warpgroups' fragments, 128 V rows (unused otherwise)
            s_pr = T.alloc_fragment((BV, K), accum)
            st_pr = T.alloc_fragment((BV, K), dtype)
            sk_pr = T.alloc_fragment((BV, SKW), accum)
            wt_pr = T.alloc_fragment((BV, BT), dtype)
            o_pr = T.alloc_fragment((BV, BT), accum)
            x_frag = T.alloc_fragment((BT, KH), accum)  # a column half of X (X's warpgroup)
            if z_in_x:
                p_frag = T.alloc_fragment((BT, BT), accum)  # Q K^T, Pg, Ag, then Z (X's warpgroup)
            if a_in_x:
                # the inverse (X's warpgroup): M = K K^T, the inverse and its scratch in fp32, the chunk's beta; the
                # solve's registers (common/unit_lower_inverse.py)
                m_s = T.alloc_shared((BT, BT + ROW_PAD), accum)
                inv_s = T.alloc_shared((BT, BT + ROW_PAD), accum)
                beta_s = T.alloc_shared((BT,), accum)
                a1_s = T.alloc_shared((BT, BT), dtype)  # A, formed and used by X's warpgroup alone (one buffer)
                kk_frag = T.alloc_fragment((BT, BT), accum)
                acc32 = T.alloc_fragment((32, 32), accum)
                col = T.alloc_local((16,), accum)
                yv = T.alloc_local((2,), accum)
                fa = T.alloc_local((4,), accum)
                fb = T.alloc_local((2,), accum)
                fc = T.alloc_local((4,), accum)

            full_kv = T.alloc_barrier([64, 64])  # K, A, g, beta and V loaded (2 producer warps)
            empty_kv = T.alloc_barrier([PT, PT])  # the math warpgroups and X's read them
            full_qz = T.alloc_barrier([32, 32])  # Q and Z loaded (1 producer warp)
            empty_qz = T.alloc_barrier([PT, PT])  # the math warpgroups and X's read them
            x_ready = T.alloc_barrier([128, 128])  # X's warpgroup wrote X and the gates of a stage
            x_free = T.alloc_barrier([PT - 128, PT - 128])  # the math warpgroups' products read that X
            o_full = T.alloc_barrier([PT - 128, PT - 128])  # the math warpgroups wrote O to o_s[stage]
            o_free = T.alloc_barrier([32, 32])  # the storer warp stored o_s[stage]

            # V is read (V^T: column pieces) and O written (O^T) across rows: swizzled so that the rows of one
            # warp access fall in different banks; TMA writes and reads the same swizzle
            T.annotate_layout({v_s: make_swizzled_layout(v_s), o_s: make_swizzled_layout(o_s)})
            tx = T.get_thread_binding()

            if math_pair and tx < 256:
                # ---------------- the math warpgroups on one code path: S^T of the slice's 128 V rows
                T.set_max_nreg(NREG_MATH, 1)
                math_half(0, BV, T.GemmWarpPolicy.FullRow, c0, s_pr, st_pr, sk_pr, wt_pr, o_pr, q_s, k_s, v_s, zr_s,
                          g_s, x_s, gam_s, gam2_s, o_s, full_kv, empty_kv, full_qz, empty_qz, x_ready, x_free, o_full,
                          o_free, h0, cp_h0, cp_out, ht, hv, seg, n, is_m, n_iter, flags, use_h0, state_v_first,
                          store_ht, emit_o, warmup, num_seqs)
            # (with math_pair the two branches below are constant False: a branch under tx >= 256 and tx < 128 made
            # TileLang 0.1.15's LegalizeNegativeIndex fail on the empty thread range)
            elif not math_pair and tx < 128:
                # ---------------- the math warpgroups: S^T of the slice's V rows [0, 64) (and [64, 128))
                T.set_max_nreg(NREG_MATH, 1)
                math_half(0, VH, T.GemmWarpPolicy.Square, c0, s0, st0, sk0, wt0, o0, q_s, k_s, v_s, zr_s, g_s,
                          x_s, gam_s, gam2_s, o_s, full_kv, empty_kv, full_qz, empty_qz, x_ready, x_free, o_full,
                          o_free, h0, cp_h0, cp_out, ht, hv, seg, n, is_m, n_iter, flags, use_h0, state_v_first,
                          store_ht, emit_o, warmup, num_seqs)
            elif not math_pair and NMATH == 2 and tx < 256:
                T.set_max_nreg(NREG_MATH, 1)
                math_half(1, VH, T.GemmWarpPolicy.Square, c0, s1, st1, sk1, wt1, o1, q_s, k_s, v_s, zr_s, g_s,
                          x_s, gam_s, gam2_s, o_s, full_kv, empty_kv, full_qz, empty_qz, x_ready, x_free, o_full,
                          o_free, h0, cp_h0, cp_out, ht, hv, seg, n, is_m, n_iter, flags, use_h0, state_v_first,
                          store_ht, emit_o, warmup, num_seqs)

            elif tx < PT:
                # ---------------- X's warpgroup: X = diag(r * beta) A^T K and the gates, a stage ahead of the math
                T.set_max_nreg(NREG_X, 0)
                for i in T.serial(n_iter):
                    T.barrier_wait(full_kv[i % 2], (i // 2) % 2)
                    if z_in_x:
                        T.barrier_wait(full_qz[i % 2], (i // 2) % 2)
                    T.barrier_wait(x_free[i % 2], (i // 2 + 1) % 2)  # chunk i - 2's products are done
                    for r in T.Parallel(BT):
                        gam_s[i % 2, r] = T.exp2(g_s[i % 2, r] * LOG2E)
                        gam2_s[i % 2, r] = scale * T.exp2(g_s[i % 2, r] * LOG2E)
                        rb_s[r] = T.exp2((g_s[i % 2, BT - 1] - g_s[i % 2, r]) * LOG2E) * b_s[i % 2, r]
                        if a_in_x:
                            beta_s[r] = b_s[i % 2, r]
                    if a_in_x:
                        # A into a1_s, as the prep forms it (K rows and beta past the sequence are 0)
                        T.gemm(k_s[i % 2, :, :], k_s[i % 2, :, :], kk_frag, transpose_B=True, clear_accum=True)
                        T.copy(kk_frag, m_s[:, 0:BT])
                        for p, r, c in T.Parallel(2, 16, 16):
                            inv_s[32 * p + r, 32 * p + 16 + c] = 0.0
                        diag8_blocks(m_s, inv_s, beta_s, col, yv, tx - (PT - 128), inv_s, 32)
                        mma_level1_merge(m_s, inv_s, beta_s, fa, fb, fc, tx - (PT - 128), inv_s, 32)
                        tc_level2_merge(m_s, inv_s, beta_s, acc32, inv_s, 32)
                        for r, c in T.Parallel(BT, BT):
                            a_rc = inv_s[r, c]
                            kk_frag[r, c] = T.if_then_else(r >= c, a_rc, 0.0)
                        T.copy(kk_frag, a1_s)
                        T.fence_proxy_async()
                    if z_in_x and emit_o:
                        # Z = Pg Ag, Pg = scale * Gamma * (Q K^T), Ag = Gamma * A * beta_col (Gamma formed inline)
                        T.gemm(q_s[i % 2, :, :], k_s[i % 2, :, :], p_frag, transpose_B=True, clear_accum=True)
                        scale_gamma(p_frag, p_frag, g_s, i % 2, scale, False, BT)
                        T.copy(p_frag, pg_s)
                        gate_a(p_frag, p_frag, g_s, a_s, b_s, i % 2, False, BT)
                        T.copy(p_frag, ag_s)
                        T.fence_proxy_async()
                        T.gemm(pg_s, ag_s, p_frag, clear_accum=True)
                        T.copy(p_frag, zr_s[i % 2, :, :])
                    for hk in T.unroll(2):
                        T.gemm(a1_s if a_in_x else a_s[i % 2, :, :], k_s[i % 2, :, hk * KH:(hk + 1) * KH], x_frag,
                               transpose_A=True, clear_accum=True)
                        for r, c in T.Parallel(BT, KH):
                            x_frag[r, c] *= rb_s[r]
                        T.copy(x_frag, x_s[i % 2, :, hk * KH:(hk + 1) * KH])
                    T.fence_proxy_async()
                    T.barrier_arrive(x_ready[i % 2])
                    T.barrier_arrive(empty_kv[i % 2])
                    T.barrier_arrive(empty_qz[i % 2])

            else:
                # ---------------- the producer warps and the storer warp
                T.set_max_nreg(NREG_LOAD, 0)
                if tx < PT + 32:
                    for i in T.serial(n_iter):
                        T.barrier_wait(empty_kv[i % 2], (i // 2 + 1) % 2)
                        t0 = seq_start + (c_first + i) * BT
                        load_rows(k, k_s, i % 2, full_kv, t0, seq_end, hq, 0, BT, K, dtype)
                        if not a_in_x:
                            load_rows(A, a_s, i % 2, full_kv, t0, seq_end, hv, 0, BT, BT, dtype)
                        load_gate_beta(g_cumsum, beta, g_s, b_s, i % 2, t0, seq_end, hv, BT)
                        T.barrier_arrive(full_kv[i % 2])
                elif tx < PT + 64:
                    for i in T.serial(n_iter):
                        T.barrier_wait(empty_kv[i % 2], (i // 2 + 1) % 2)
                        t0 = seq_start + (c_first + i) * BT
                        load_rows(v, v_s, i % 2, full_kv, t0, v_end, hv, c0, BT, BV, dtype)
                        T.barrier_arrive(full_kv[i % 2])
                elif tx < PT + 96:
                    for i in T.serial(n_iter):
                        T.barrier_wait(empty_qz[i % 2], (i // 2 + 1) % 2)
                        t0 = seq_start + (c_first + i) * BT
                        if emit_o:  # (Q S~, and with z_in_x Q K^T)
                            load_rows(q, q_s, i % 2, full_qz, t0, seq_end, hq, 0, BT, K, dtype)
                            if not z_in_x:
                                load_rows(z, zr_s, i % 2, full_qz, t0, seq_end, hv, 0, BT, BT, dtype)
                        T.barrier_arrive(full_qz[i % 2])
                else:
                    if emit_o:
                        store_o_walk(o, o_s, o_full, o_free, seq_start, seq_end, c_first, n_iter, hv, c0, BT, BV)
                        # the last sequence's last segment zeroes the padding tail [cu[N], T)
                        if is_last and n == num_seqs - 1:
                            zero_padding_tail(o, seq_end, num_tokens, hv, c0, BT, BV, dtype)

    return gdn_fwd_rs
