"""Fused chunked GDN forward (SM90), warp specialized, with intra-card context parallelism.

One CTA per (segment, v-head, BV-wide slice of V) walks the segment's chunks in order with
the fp32 state S [K, BV] in registers. A segment is a run of consecutive chunks of one
sequence (docs/gdn_chunk_derivation.md, "Segments"); which sequence and which chunks each CTA
runs comes from the tables of the segment-plan kernel (seg_plan.py). Per chunk ("Two-GEMM
chain"), with S~ the bf16 copy of S,
gamma_i = exp(gc_i), r_i = exp(gc_last - gc_i) and Gamma_ij = exp(gc_i - gc_j) (i >= j):

    X  = diag(r * beta) A^T K          (off the chain: no S)
    Z  = (scale * Gamma * (Q K^T)) (Gamma * A * beta_col)   (from the chunk prep, chunk_prep.py)
    U  = K S~                          W  = V - gamma * U
    S  = gamma_last * S + X^T W        (the chain: two GEMMs, U and X^T W)
    O  = scale * gamma * (Q S~) + Z W

Warpgroups: WG0 holds S, publishes S~ and applies X^T W; WG1 computes X, U and W; WG2
computes O; WG3: three producer warps fill a two-stage ring (TMA for full chunks, zero-filled
element copies for a partial chunk; q and Z only when o is stored) and a storer warp copies S~ to h
(per chunk slot) for the backward. W is double-buffered; at BV = 64 also S~ and X, so that WG2 and the
storer never hold up the chain, and O goes through shared memory to the storer warp, which stores it in
16-byte row pieces (stage_o); at BV = 128 (one CTA per head, where the heads fill the SMs) there is room
for one S~ and one X buffer only, and WG2 stores O from registers, or with stage_o (full chunks) by TMA
from its own chunk's W stage once WG0 has read W. Element-wise work reads and writes shared memory in
separate loops (a loop doing both got a barrier per iteration from TileLang), and the buffers read in the
accumulator layout are swizzled (docs/fwd_profile.md).

The warm-up pass (`warmup` = 1, docs "Context parallelism") reuses this kernel: the first
half of the CTAs runs the warm-up chunks of each segment from S = 0 and stores the end state
to cp_out[seg]; the second half runs the whole segment from S = I with V = 0 for heads
without enough decay (the exact fallback) and stores the transition matrix to
cp_out[num_segs + seg]. The main pass starts a sequence's later segments from cp_h0[seg].
"""

import tilelang.language as T
from tilelang.layout import make_swizzled_layout

from common.bf16_split import store_split_slot
from common.chunk_gates import gate_a, scale_gamma
from common.chunk_load import load_gate_beta, load_rows
from common.chunk_store import store_seq_rows, store_state_tile, zero_padding_tail
from common.grid_dependency import grid_dependency
from common.segments import grid_row
from common.seq_index import seq_bound
from common.walk_dims import walk_dims

LOG2E = 1.4426950408889634


def gdn_fwd_sm90(
    # task config
    dtype: str = "bfloat16",
    K: int = 128,
    V: int = 128,
    # kernel config
    BT: int = 64,
    BV: int = 64,
    stage_o: bool = False,  # o through shared memory: by the storer warp at BV = 64, by TMA from W's stage at 128
    # the storer warp stores S~ to h (the backward's recompute, save_chunk_states) by TMA from its shared tile instead
    # of 16-byte element stores (fwd_profile.md's rule: off the load/store pipe the other warpgroups' shared-memory
    # work uses). H200 (ablate.py, --no-o --store-h, outputs bitwise equal): 2.26 -> 2.05 us per chunk at BV = 128,
    # (16, 64); 1.41 -> 1.30 at BV = 64, (2, 8). On in variants.py for the sm90 family
    tma_h: bool = False,
    # WG2 forms Z = (scale * Gamma * (Q K^T)) (Gamma * A * beta_col) itself, before it waits for S~,
    # from the ring's Q, K, A and gates, instead of loading the chunk prep's Z: the prep then reads no Q and stores no
    # Z (chunk_prep.py form_z=False): 512 of the ~2050 bytes of HBM traffic per token and v-head of the prep and this
    # kernel together (Q's read and Z's write in the prep, Z's read here), where the multi-sequence shapes are
    # memory-bound (e.g. (32, 32) 8192x4: 2.1 GB moved in 0.65 ms). Pg goes to the tensor cores from registers (RS), Ag
    # through z_s, and Z stays in registers as the bf16 A operand of O += Z W. Ag's A is the bf16 one (the prep rounded
    # Gamma * A * beta from the fp32 inverse): one more rounding of a bf16 operand. H200 (bca921e's wheel against
    # 4055a3f's, flashqla alone; benchmarks/results/H200_z_in_kernel.md): correct (235 GPU tests passed) but the forward
    # took 1.41x the time at (32, 32) 8192x4, 1.42x at (32, 32) 1x8192, 1.52x at (16, 64) 8192x4, 1.13x at (2, 8)
    # 1x8192: WG2 had no room for two more GEMMs and two element-wise passes per chunk (it starts chunk i's Z only after
    # chunk i - 1's O, and at BV = 128 WG0 writes the next S~ only after WG2's Q S~ read: one S~ buffer). Off
    z_in_kernel: bool = False,
    # WG2 reads Z for O += Z W from the ring's stage instead of copying it to z_s first (a 64 x 64 pass through its
    # registers and a warpgroup barrier per chunk off WG2's work, which z_in_kernel showed to be near its limit); WG2
    # then frees the ring stage after Z W instead of after Q S~. H200 (ablate.py, 8192 tokens, o bitwise the same;
    # benchmarks/results/H200_z_from_ring.md): BV = 128 2.94 -> 2.83 us per chunk at (128, 128), 2.60 -> 2.57 at
    # (32, 32); BV = 64 1.95 -> 1.89 at (32, 32), 3.87 -> 4.02 at (128, 128). On in variants.py's BV = 128 row (in the
    # op, four and eight sequences: 0.963-0.998x the forward's time)
    z_from_ring: bool = False,
    # programmatic dependent launch (common/grid_dependency.py): the kernel may start while the one before it on
    # the stream finishes; every global access waits for that one's completion
    pdl: bool = False,
    # the warm-up pass's transition rows launched before its end-state rows (common/segments.py grid_row): the
    # long rows of the fallback heads in the first wave instead of the last (40th session: at (4, 8) 1x8192 this
    # warm-up took 38 us on an H100 in the backward's recompute, the state gradient's 57 us; not yet measured)
    fallback_first: bool = False,
):
    assert V % BV == 0 and BV in (32, 64, 128)
    assert not (z_in_kernel and z_from_ring), "z_from_ring reads the prep's Z"
    NV = V // BV
    # S~ and X buffers: two at BV = 64 (and 32: four CTAs per head and segment, where the heads leave SMs idle); one at
    # BV = 128 (one CTA per head and segment, for calls whose heads fill the SMs), whose ring, S~ and W would not fit
    # the 227 KB of shared memory otherwise
    NST = 2 if BV <= 64 else 1
    STAGE_O = stage_o and BV <= 64
    # at BV = 128 there is no room for o_s: O(i) of a full chunk goes to W(i)'s stage, which WG2 has read (Z W) and
    # WG0 has read (X^T W: WG0 then arrives on w_read, which WG2 waits for), and one thread of WG2 stores it by TMA;
    # WG2 frees the stage (w_free, WG2's alone here) once the TMA has read it, or at once without o: WG1 waits on
    # w_read for X's buffer (chunk i - 1's, which implies that WG0 has read chunk i - 2's W too) and on w_free for
    # W's stage. (Stored from W's stage by the storer warp in 16-byte row pieces, or through q's ring stage, it was
    # slower than from registers: benchmarks/results/H200_fwd_stage_o128.md)
    STAGE_OW = stage_o and BV == 128
    O_STAGE = (BT, BV) if STAGE_O else (8, 8)  # o_s: a stub when o is stored from registers or through W's stage
    # registers per thread of WG2 and of the producer warps (with 160 for WG0 and WG1: 512 in all); the storer
    # warp's o store takes 24 of WG2's, which then holds a 64 x 64 O (at BV = 128 a 64 x 128 O: no spills in WG2
    # at 128 either, and the producer warps' spill stores in ptxas -v go from 640 to 472 bytes)
    NREG_O, NREG_LOAD = (128, 64) if STAGE_O or STAGE_OW else (152, 40)
    num_tokens, H, HV, N1, NS, NH, NSEG, NGRID, NROWS = walk_dims()  # common/walk_dims.py
    accum = "float32"

    @T.macro
    def store_frag_rows(src, dst, t0, seq_end, hv, v0):
        """dst[t0 + r, hv, v0 + c] <- src[r, c] (a fragment) for the rows of the sequence: one copy for a full chunk"""
        if t0 + BT <= seq_end:
            T.copy(src, dst[t0:t0 + BT, hv, v0:v0 + BV])
        else:
            for r, c in T.Parallel(BT, BV):
                if t0 + r < seq_end:
                    dst[t0 + r, hv, v0 + c] = T.cast(src[r, c], dtype)

    @T.macro
    def store_frag_tma(src, ring, stage, dst, t0, seq_end, hv, v0):
        """dst[t0 + r, hv, v0 + c] <- src[r, c] (a fragment) for the rows of the sequence: through ring[stage] and one
        TMA store for a full chunk (waited for until the TMA has read the stage), by element stores otherwise"""
        if t0 + BT <= seq_end:
            T.copy(src, ring[stage, :, :])
            T.fence_proxy_async()  # the generic writes, then the TMA's read
            T.tma_copy(ring[stage, :, :], dst[t0:t0 + BT, hv, v0:v0 + BV])
            T.tma_store_wait()
        else:
            store_frag_rows(src, dst, t0, seq_end, hv, v0)

    @T.prim_func
    def gdn_fwd(
        q: T.Tensor((num_tokens, H, K), dtype),
        k: T.Tensor((num_tokens, H, K), dtype),
        v: T.Tensor((num_tokens, HV, V), dtype),
        A: T.Tensor((num_tokens, HV, BT), dtype),
        # read only when o is stored without z_in_kernel (any [T, HV, BT] buffer otherwise)
        z: T.Tensor((num_tokens, HV, BT), dtype),
        g_cumsum: T.Tensor((num_tokens, HV), accum),
        beta: T.Tensor((num_tokens, HV), accum),
        cu_seqlens: T.Tensor((N1,), "int32"),
        h0: T.Tensor((NS, HV, K, V), accum),  # [N, HV, K, V], or [N, HV, V, K] if state_v_first
        o: T.Tensor((num_tokens, HV, V), dtype),
        ht: T.Tensor((NS, HV, K, V), accum),  # same layout as h0
        h: T.Tensor((NH, HV, K, V), dtype),  # S~ at the start of each chunk, by chunk slot ([K, V])
        seg_seq: T.Tensor((NSEG,), "int32"),  # the sequence of every segment slot (N: padding)
        ranges: T.Tensor((NROWS, HV, 3), "int32"),  # (first chunk, count, flags) per CTA row
        cp_h0: T.Tensor((NSEG, HV, K, V), accum),  # start state of every segment j > 0 (main pass)
        cp_out: T.Tensor((NGRID, HV, K, V), accum),  # warm-up end states, then transition matrices
        scale: T.float32,
        use_h0: T.int32,
        store_ht: T.int32,
        state_v_first: T.int32,
        store_o: T.int32,
        store_h: T.int32,
        warmup: T.int32,
        group: T.int32,  # HV / H, from the launcher: head indices are products, never divisions
    ):
        # grid ((v-head in the group, V slice), qk-head, segment CTA): head indices are block indices and
        # products, never divisions in the 64-bit offsets TileLang re-derives in every load and store
        # (a division there costs ~100 instructions; NV is a constant, so jv // NV is a shift). The segment
        # row is the slowest grid index: blocks start in the order of their linear index, so the CTAs of a
        # row (a sequence without CP) start together; with the row fastest, a long sequence's CTAs were
        # interleaved with a short one's and started in later waves ((16, 64) 24576+8192 took 1.25x the
        # time of 1x32768). The row is blockIdx.z: at most 65535 rows (csrc/ops/segment_plan.cpp).
        with T.Kernel(group * NV, H, NGRID, threads=512) as (jv, hq, bx):
            grid_dependency(pdl)
            hv = hq * group + jv // NV
            vb = jv % NV
            br = grid_row(bx, warmup, NSEG, fallback_first)  # the row this block runs
            seg = br % NSEG
            is_m = br // NSEG  # 1: a transition-matrix CTA of the warm-up pass
            v0 = vb * BV
            num_seqs = N1 - 1

            # the segment's sequence, and the chunks this CTA runs (tilelang_src/sm90/seg_plan.py)
            n = seg_seq[seg]
            row = T.min(warmup, 1) * NSEG + br  # warm-up rows follow the main-pass rows (warmup 1 or 2)
            c_first = ranges[row, hv, 0]
            n_iter = ranges[row, hv, 1]
            flags = ranges[row, hv, 2]
            has_prev = flags % 2 == 1  # start from cp_h0: not the sequence's first segment
            is_last = (flags // 2) % 2 == 1  # the sequence's last segment stores the final state
            seq_start = seq_bound(cu_seqlens, n, num_tokens)
            # n = num_seqs (a padding slot) gives seq_end = seq_start: no chunks
            seq_end = T.max(seq_bound(cu_seqlens, T.min(n + 1, num_seqs), num_tokens), seq_start)
            # the transition-matrix CTAs load V = 0: an end before every chunk pads all rows
            v_end = seq_end - (flags // 4) * (seq_end + BT)
            first_slot = seq_start // BT + n  # docs/gdn_chunk_derivation.md, "Chunk slots"
            emit_o = store_o != 0 and warmup == 0  # the warm-up pass and the state recompute store no o

            # ring filled by WG3
            q_s = T.alloc_shared((2, BT, K), dtype)
            k_s = T.alloc_shared((2, BT, K), dtype)
            v_s = T.alloc_shared((2, BT, BV), dtype)
            a_s = T.alloc_shared((2, BT, BT), dtype)
            if not z_in_kernel:
                zr_s = T.alloc_shared((2, BT, BT), dtype)  # Z (only when o is stored)
            g_s = T.alloc_shared((2, BT), accum)
            b_s = T.alloc_shared((2, BT), accum)
            # exchange on the chain (S~ and X: NST buffers)
            st_s = T.alloc_shared((NST, K, BV), dtype)  # S~ (WG0 -> WG1, WG2, storer)
            x_s = T.alloc_shared((NST, BT, K), dtype)  # X (WG1 -> WG0)
            w_s = T.alloc_shared((2, BT, BV), dtype)  # W (WG1 -> WG0, WG2)
            # WG2 only
            # Z, copied out of the ring (the stage is freed early); with z_in_kernel Ag
            z_s = T.alloc_shared((BT, BT), dtype)
            gam2_s = T.alloc_shared((BT,), accum)  # scale * gamma
            o_s = T.alloc_shared(O_STAGE, dtype)  # O (WG2 -> storer), with STAGE_O
            # WG1 only
            gam1_s = T.alloc_shared((BT,), accum)  # gamma
            rb_s = T.alloc_shared((BT,), accum)  # r * beta

            s_frag = T.alloc_fragment((K, BV), accum)
            x_frag = T.alloc_fragment((BT, K), accum)
            u_frag = T.alloc_fragment((BT, BV), accum)
            o_frag = T.alloc_fragment((BT, BV), accum)
            if z_in_kernel:
                zq_frag = T.alloc_fragment((BT, BT), accum)  # Q K^T, Pg, Ag, then Z (WG2)
                pg_frag = T.alloc_fragment((BT, BT), dtype)  # Pg: the A operand of Z = Pg Ag
                zb_frag = T.alloc_fragment((BT, BT), dtype)  # Z: the A operand of O += Z W
            decay = T.alloc_var(accum)

            full = T.alloc_barrier([96, 96])  # 3 loader warps per stage
            empty = T.alloc_barrier([384, 384])  # 3 consumer warpgroups per stage
            st_ready = T.alloc_barrier([128] * NST)  # WG0 wrote S~
            st_free = T.alloc_barrier([288] * NST)  # WG1, WG2 and the storer warp read S~
            w_ready = T.alloc_barrier([128, 128])  # WG1 wrote X and W
            if STAGE_OW:
                w_read = T.alloc_barrier([128, 128])  # WG0 read X and W
                w_free = T.alloc_barrier([128, 128])  # WG2 stored O out of W's stage (the TMA read it)
            else:
                w_free = T.alloc_barrier([256, 256])  # WG0 and WG2 read W (WG0 also X)
            o_full = T.alloc_barrier(128)  # WG2 wrote O (STAGE_O)
            o_free = T.alloc_barrier(32)  # the storer warp stored O (STAGE_O)

            # V is read, and O written (stmatrix), in the accumulator layout (8 rows per warp access): swizzled
            # so that those rows fall in different banks (row-major, they share 4); TMA writes V's swizzle
            if STAGE_O:
                T.annotate_layout({v_s: make_swizzled_layout(v_s), o_s: make_swizzled_layout(o_s)})
            else:
                T.annotate_layout({v_s: make_swizzled_layout(v_s)})
            tx = T.get_thread_binding()

            if tx < 128:
                # ---------------- WG0: the state
                T.set_max_nreg(160, 1)
                if warmup != 0:
                    for a, b in T.Parallel(K, BV):
                        s_frag[a, b] = T.if_then_else(is_m != 0 and a == v0 + b, 1.0, 0.0)
                elif has_prev and n_iter > 0:
                    T.copy(cp_h0[seg, hv, 0:K, v0:v0 + BV], s_frag)
                elif use_h0 != 0 and n < num_seqs:
                    if state_v_first != 0:
                        for a, b in T.Parallel(K, BV):
                            s_frag[a, b] = h0[n, hv, v0 + b, a]
                    else:
                        T.copy(h0[n, hv, 0:K, v0:v0 + BV], s_frag)
                else:
                    T.clear(s_frag)
                for i in T.serial(n_iter):
                    T.barrier_wait(full[i % 2], (i // 2) % 2)
                    T.barrier_wait(st_free[i % NST], (i // NST + 1) % 2)
                    T.copy(s_frag, st_s[i % NST, :, :])
                    T.fence_proxy_async()
                    T.barrier_arrive(st_ready[i % NST])
                    decay = T.exp2(g_s[i % 2, BT - 1] * LOG2E)
                    T.barrier_arrive(empty[i % 2])  # the last read of this ring stage
                    for a, b in T.Parallel(K, BV):
                        s_frag[a, b] *= decay
                    T.barrier_wait(w_ready[i % 2], (i // 2) % 2)
                    # S += X^T W
                    T.gemm(x_s[i % NST, :, :], w_s[i % 2, :, :], s_frag, transpose_A=True)
                    if STAGE_OW:
                        T.barrier_arrive(w_read[i % 2])
                    else:
                        T.barrier_arrive(w_free[i % 2])
                if warmup != 0:
                    if n_iter > 0:
                        if warmup == 2 and is_m != 0:  # the transition split for the walk (cp_correct.py split_m)
                            for a, b in T.Parallel(K, BV):
                                store_split_slot(cp_out, NSEG + seg, hv, a, v0 + b, s_frag[a, b])
                        else:
                            T.copy(s_frag, cp_out[is_m * NSEG + seg, hv, 0:K, v0:v0 + BV])
                elif store_ht != 0 and is_last:
                    if state_v_first != 0:
                        for a, b in T.Parallel(K, BV):
                            ht[n, hv, v0 + b, a] = s_frag[a, b]
                    else:
                        T.copy(s_frag, ht[n, hv, 0:K, v0:v0 + BV])

            elif tx < 256:
                # ---------------- WG1: X, U, W
                T.set_max_nreg(160, 1)
                for i in T.serial(n_iter):
                    T.barrier_wait(full[i % 2], (i // 2) % 2)
                    for r in T.Parallel(BT):
                        gam1_s[r] = T.exp2(g_s[i % 2, r] * LOG2E)
                        rb_s[r] = T.exp2((g_s[i % 2, BT - 1] - g_s[i % 2, r]) * LOG2E) * b_s[i % 2, r]
                    # X = diag(r * beta) A^T K (beta is 0 on padded rows)
                    T.gemm(a_s[i % 2, :, :], k_s[i % 2, :, :], x_frag, transpose_A=True, clear_accum=True)
                    for r, c in T.Parallel(BT, K):
                        x_frag[r, c] *= rb_s[r]
                    # X's buffer (and W's stage) free: chunk i - NST's X^T W is done, and WG2's read of that W
                    # (chunk i - 1's implies chunk i - 2's: both readers arrive in chunk order)
                    if STAGE_OW:  # X's buffer: WG0 read chunk i - 1's (W's stage: below)
                        T.barrier_wait(w_read[(i + 1) % 2], ((i + 1) // 2 + 1) % 2)
                    else:
                        T.barrier_wait(w_free[(i + NST) % 2], ((i + NST) // 2 + NST) % 2)  # chunk i - NST's phase
                    T.copy(x_frag, x_s[i % NST, :, :])
                    T.barrier_wait(st_ready[i % NST], (i // NST) % 2)
                    # U = K S~
                    T.gemm(k_s[i % 2, :, :], st_s[i % NST, :, :], u_frag, clear_accum=True)
                    T.barrier_arrive(st_free[i % NST])
                    # W in registers, then one copy: a shared read and a shared write in one loop got a named barrier
                    # per iteration from TileLang's sync planner (32 per chunk at BV = 128)
                    for r, c in T.Parallel(BT, BV):
                        u_frag[r, c] = v_s[i % 2, r, c] - gam1_s[r] * u_frag[r, c]
                    if STAGE_OW:  # W's stage: chunk i - 2's O is stored out of it
                        T.barrier_wait(w_free[i % 2], (i // 2 + 1) % 2)
                    T.copy(u_frag, w_s[i % 2, :, :])
                    T.fence_proxy_async()
                    T.barrier_arrive(w_ready[i % 2])
                    T.barrier_arrive(empty[i % 2])

            elif tx < 384:
                # ---------------- WG2: O; only the barrier protocol when no o is stored (the warm-up
                # pass and the backward's state recompute)
                T.set_max_nreg(NREG_O, 1)  # O and little else: the rest goes to the producer warps
                for i in T.serial(n_iter):
                    T.barrier_wait(full[i % 2], (i // 2) % 2)
                    t0 = seq_start + (c_first + i) * BT
                    if emit_o:
                        for r in T.Parallel(BT):
                            gam2_s[r] = scale * T.exp2(g_s[i % 2, r] * LOG2E)
                        if z_in_kernel:
                            # Z = Pg Ag: Pg = scale * Gamma * (Q K^T) in registers, Ag = Gamma * A * beta_col formed in
                            # the fragment (shared reads only) and copied to z_s (a loop that reads and writes shared
                            # memory gets a barrier per iteration)
                            # (Gamma formed inline: no held Gamma fragment, so zq_frag stands in for gm)
                            T.gemm(q_s[i % 2, :, :], k_s[i % 2, :, :], zq_frag, transpose_B=True, clear_accum=True)
                            scale_gamma(zq_frag, zq_frag, g_s, i % 2, scale, False, BT)
                            T.copy(zq_frag, pg_frag)
                            gate_a(zq_frag, zq_frag, g_s, a_s, b_s, i % 2, False, BT)
                            T.copy(zq_frag, z_s)
                            T.fence_proxy_async()
                            T.gemm(pg_frag, z_s, zq_frag, clear_accum=True)
                            T.copy(zq_frag, zb_frag)
                        elif not z_from_ring:
                            T.copy(zr_s[i % 2, :, :], z_s)
                            T.fence_proxy_async()
                    T.barrier_wait(st_ready[i % NST], (i // NST) % 2)
                    if emit_o:
                        # O = scale * gamma * (Q S~)
                        T.gemm(q_s[i % 2, :, :], st_s[i % NST, :, :], o_frag, clear_accum=True)
                    T.barrier_arrive(st_free[i % NST])
                    if not z_from_ring:
                        T.barrier_arrive(empty[i % 2])  # the last read of this ring stage
                    elif store_o == 0 or warmup != 0:
                        T.barrier_arrive(empty[i % 2])  # no o: nothing reads Z
                    if emit_o:
                        for r, c in T.Parallel(BT, BV):
                            o_frag[r, c] *= gam2_s[r]
                    T.barrier_wait(w_ready[i % 2], (i // 2) % 2)
                    if emit_o:
                        # O += Z W
                        if z_in_kernel:
                            T.gemm(zb_frag, w_s[i % 2, :, :], o_frag)
                        elif z_from_ring:
                            T.gemm(zr_s[i % 2, :, :], w_s[i % 2, :, :], o_frag)
                        else:
                            T.gemm(z_s, w_s[i % 2, :, :], o_frag)
                    if z_from_ring:
                        if emit_o:
                            T.barrier_arrive(empty[i % 2])  # the last read of this ring stage (Z)
                    if not STAGE_OW:
                        T.barrier_arrive(w_free[i % 2])
                    if emit_o:
                        if STAGE_O:
                            # the storer stores it: 16-byte row pieces instead of the accumulator layout's
                            # 4-byte pairs of 8 rows per warp store
                            T.barrier_wait(o_free[0], (i + 1) % 2)  # chunk i - 1's O is stored
                            T.copy(o_frag, o_s)
                            T.barrier_arrive(o_full[0])
                        elif STAGE_OW:
                            T.barrier_wait(w_read[i % 2], (i // 2) % 2)  # WG0 has read W(i) too
                            store_frag_tma(o_frag, w_s, i % 2, o, t0, seq_end, hv, v0)
                        else:
                            store_frag_rows(o_frag, o, t0, seq_end, hv, v0)
                    if STAGE_OW:
                        T.barrier_arrive(w_free[i % 2])
                # the last sequence's last segment zeroes the padding tail [cu[N], T)
                if emit_o and is_last and n == num_seqs - 1:
                    zero_padding_tail(o, seq_end, num_tokens, hv, v0, BT, BV, dtype)

            else:
                # ---------------- WG3: loads, and the storer warp
                T.set_max_nreg(NREG_LOAD, 0)  # fewer spills in the loads' index arithmetic (sm_90a: 257 -> 78)
                if tx < 384 + 32:
                    for i in T.serial(n_iter):
                        T.barrier_wait(empty[i % 2], (i // 2 + 1) % 2)
                        t0 = seq_start + (c_first + i) * BT
                        if emit_o:  # only O reads q: the warm-up pass and the state recompute skip it
                            load_rows(q, q_s, i % 2, full, t0, seq_end, hq, 0, BT, K, dtype)
                        load_rows(k, k_s, i % 2, full, t0, seq_end, hq, 0, BT, K, dtype)
                        T.barrier_arrive(full[i % 2])
                elif tx < 384 + 64:
                    for i in T.serial(n_iter):
                        T.barrier_wait(empty[i % 2], (i // 2 + 1) % 2)
                        t0 = seq_start + (c_first + i) * BT
                        load_rows(v, v_s, i % 2, full, t0, v_end, hv, v0, BT, BV, dtype)
                        T.barrier_arrive(full[i % 2])
                elif tx < 384 + 96:
                    for i in T.serial(n_iter):
                        T.barrier_wait(empty[i % 2], (i // 2 + 1) % 2)
                        t0 = seq_start + (c_first + i) * BT
                        load_rows(A, a_s, i % 2, full, t0, seq_end, hv, 0, BT, BT, dtype)
                        if not z_in_kernel and emit_o:
                            load_rows(z, zr_s, i % 2, full, t0, seq_end, hv, 0, BT, BT, dtype)
                        load_gate_beta(g_cumsum, beta, g_s, b_s, i % 2, t0, seq_end, hv, BT)
                        T.barrier_arrive(full[i % 2])
                else:
                    for i in T.serial(n_iter):
                        T.barrier_wait(st_ready[i % NST], (i // NST) % 2)
                        if store_h != 0 and warmup == 0:
                            store_state_tile(st_s, i % NST, h, first_slot + c_first + i, hv, v0, K, BV, tma_h)
                        T.barrier_arrive(st_free[i % NST])
                        if STAGE_O and emit_o:
                            T.barrier_wait(o_full[0], i % 2)
                            store_seq_rows(o_s, o, seq_start + (c_first + i) * BT, seq_end, hv, v0, BT, BV)
                            T.barrier_arrive(o_free[0])

    return gdn_fwd
