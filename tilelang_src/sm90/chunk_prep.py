"""Chunk preparation for the GDN forward, one CTA per (chunk slot, qk-head, block of `vpc` v-heads of its
group); nothing Hopper-specific (128 threads, T.gemm, 53.5 KB of shared memory), so every kernel family uses it
(variants.py).

    gc[t] = sum of g over the chunk up to and including token t          (fp32)
    A     = (I + strictLower(diag(beta) K K^T))^-1 per BT-token chunk     (q dtype)
    Z     = (scale * Gamma * (Q K^T)) (Gamma * A * beta_col),   Gamma_ij = exp(gc_i - gc_j) (i >= j)

A carries no gate (docs/gdn_chunk_derivation.md, "Ungated inverse"); Z is the fused forward's intra-chunk
output matrix, formed here off the forward's critical path. Q and K are loaded once per CTA (both at the start:
one round trip to memory), K K^T and Q K^T formed once and kept in one fp32 matrix M of shared memory:
M[r, c] = (Q K^T)[r, c] for r >= c, (K K^T)[r, c] for r < c (K K^T is symmetric, and T = I + L only needs its
strictly lower part: T[m, j] = beta_m M[j, m] for m > j). Then the CTA walks its `vpc` v-heads (a run-time
count: the op picks the largest divisor of the group up to VPC_MAX), each with its own gates, inverse, Pg, Ag,
Z and stores; per v-head the work is the same whatever vpc is, so the outputs do not depend on it.

The 64x64 unit-lower-triangular inverse is exact blockwise forward substitution: the four 16x16 diagonal
blocks (one thread per column, in registers, T's entries taken as beta_m M[j, m] term by term), then the merges
X_lo = -D_hi T_lo D_lo at 16 and 32, each row of T_lo D_lo scaled by beta after the product's sum
(beta_r sum_j M[j, r] X[j, c]). The diagonal blocks and the level-1 merge are fp32 FMAs; with tc_level2 the
level-2 merge's two 32x32x32 products run on tensor cores in TF32 (10 mantissa bits per operand against A's 8 in
bf16; FlashQLA's kkt_solve does this merge in fp32-operand GEMMs too). The merges' scratch is the inverse's
strictly upper 32-block (inv_s[0:32, 32:64]), which nothing reads: A and Ag are formed from the lower triangle.
Every CTA computes unconditionally (idle slots on zeros) so that barriers never sit inside a data-dependent
branch; only the stores are masked. Tokens of the padding tail [cu[N], T) get gc = 0, A = 0 and Z = 0.
Measurements (H200): benchmarks/results/H200_prep_group.md.
"""

import tilelang.language as T

from common.grid_dependency import grid_dependency
from common.seq_index import chunk_of_slot, chunk_rows
from common.unit_lower_inverse import (diag8_blocks, mma_level1_merge, mma_level2_merge, solve_diag_column,
                                       tc_level2_merge)

LOG2E = 1.4426950408889634
# floats of padding per row of the fp32 C x C shared matrices: rows 4 banks apart, so that the column reads of the
# merges and the accumulator-layout reads and writes (8 rows x 4 column pairs per warp) hit distinct banks
ROW_PAD = 4


def gdn_chunk_prep_sm90(
    # task config
    dtype: str = "bfloat16",
    K: int = 128,
    # kernel config
    BT: int = 64,
    VPC_MAX: int = 4,  # v-heads per CTA at most (their gates are loaded at the start)
    threads: int = 128,
    # CTAs per SM that nvcc must leave registers for: 3 (at most 170 registers per thread; 162 taken); at 4 (128)
    # c6f644c's kernel spilled, and it took 175 without a bound. With tma_stores 4 fit in 128 without spills (nvcc
    # 13.0) and the prep is 2-4% faster on the H200 (benchmarks/results/H200_tma_stores.md): the sm90 family's choice
    min_blocks: int = 3,
    # Pg and Ag formed in one loop (Gamma evaluated once, Ag in qk's registers). H200, 32768 tokens, vpc = 4:
    # 746 -> 715 us at (16, 64), 393 -> 377 at (8, 32) with min_blocks = 3; either alone gained nothing
    # (benchmarks/results/H200_prep_group.md)
    pg_ag_one_loop: bool = True,
    # the level-2 merge's two 32x32x32 products as TF32 GEMMs (mma.sync; operands truncated to 10 mantissa bits)
    # instead of fp32 FMA loops over shared memory (their loads were a quarter of the kernel's time)
    tc_level2: bool = True,
    # the level-1 merge's products (two 16x16x16 per 32-block) as one 32x32x32 TF32 GEMM each over block-diagonal
    # operands (K K^T's blocks once per CTA, the diagonal inverses copied there by the solve; 13.8 KB more shared
    # memory). H200: 3-4% slower (benchmarks/results/H200_fwd_stage_o128.md): off
    tc_level1: bool = False,
    # A and Z of a full chunk stored by TMA from pa_s (waited for before the next v-head writes pa_s) instead of
    # 16-byte element stores (docs/fwd_profile.md's rule; the stores were 83 of 780 us at (16, 64)). H200 (ablate.py,
    # 32768 tokens, outputs bitwise equal): 624.5 -> 590.9 us at (16, 64), 103.8 -> 91.7 at (2, 8). On in variants.py
    # for the sm90 family
    tma_stores: bool = False,
    # Z = Pg Ag with Pg from registers (an RS wgmma: Pg converted to the q dtype in a fragment, never written to shared
    # memory) and A formed while the tensor cores form Z (the wgmma issued, not waited for, before A's loop): two of
    # the Pg / Ag / Z / A piece's shared-memory passes and its serial wgmma wait off the v-head's chain (that piece was
    # 178 of 580 us at (16, 64), benchmarks/results/H200_tma_stores.md). Needs pg_ag_one_loop. H200 with tma_loads
    # (ablate.py, 32768 tokens, outputs bitwise equal; benchmarks/results/H200_prep_zld.md): 566.4 -> 543.6 us at
    # (16, 64), 214.1 -> 190.7 at (16, 16), 86.5 -> 83.6 at (2, 8). On in variants.py for the sm90 family
    z_rs: bool = False,
    # Q and K of a full chunk loaded by TMA (two 16 KB tiles on one mbarrier, issued by warp 0) instead of 16 element
    # loads of 16 bytes per thread (the loads were 70 of 580 us at (16, 64) with 4 CTAs per SM); partial chunks as
    # before. H200: see z_rs (alone 526.9 us at (16, 64), but 94.2 at (2, 8)); on with it for the sm90 family
    tma_loads: bool = False,
    # the level-1 merge's two 16x16x16 products per 32-block on per-warp TF32 mma.sync (m16n8k8): warp w forms
    # columns 8 (w % 2) .. + 8 of 32-block w // 2's products, its operands loaded from the fp32 matrices in the
    # instruction's fragment layout (6 shared loads per k-step against the FMA loop's 2 per multiply-add; that loop
    # was 89 of 580 us at (16, 64), benchmarks/results/H200_tma_stores.md). TF32 merges are as accurate as today's
    # prep at l2-normalized keys (docs/inverse_precision.md). The fragment indexing checked against the FMA merge by a
    # lane-by-lane emulation (scripts/prep_inverse_emulation.py); nvcc 13.0: 128 registers, 28 bytes spilled against
    # the default's 32; none with diag8 too. H200 (ablate.py, 32768 tokens; benchmarks/results/H200_prep_inverse.md):
    # 529.7 -> 468.9 us at (16, 64), 92.0 -> 75.7 at (2, 8); A within one bf16 ulp. On with diag8 for the sm90 family
    mma_level1: bool = False,
    # the diagonal 16x16 blocks of the inverse from 8x8 ones: 64 threads solve the eight 8x8 diagonal blocks (a
    # 28-step chain per column against the 16x16 solve's 120), then each warp merges one 16-block, X = -D2 T21 D1 (two
    # 8x8x8 products, two outputs per thread). The 16x16 solves were 40 of 580 us at (16, 64) and are the inverse's
    # longest dependent chain (its latency matters for an inverse inside the fused forward, speed_plan Forward next 1).
    # Checked against the inverses of T's diagonal blocks in float64 by scripts/prep_inverse_emulation.py; no spills.
    # H200 (as mma_level1): alone 529.7 -> 515.1 us at (16, 64), 92.0 -> 84.2 at (2, 8); with mma_level1 453.0 and
    # 73.4. On with it for the sm90 family
    diag8: bool = False,
    # the gates of all the CTA's v-heads summed once, one warp per v-head, right after their load (g_all's rows),
    # instead of each v-head's copy summed in place inside the loop: the loop's scan (one warp, the others waiting)
    # and a block barrier per v-head off the chain. The same scan per row (TileLang's InclusiveScanLine, 32-lane
    # segments), so g_cumsum and every output are bitwise the same. The v-head loop's skeleton (gates copied and
    # summed, its barriers) was 1.5 us per v-head on a lone warpgroup (benchmarks/results/H200_prep_inverse.md).
    # H200 (ablate.py spec prep4go, 32768 tokens, outputs bitwise equal): 72.1 -> 71.1 us at (2, 8), 158.9 -> 162.7 at
    # (16, 16), 255.1 -> 257.0 at (16, 32), 448.2 -> 447.1 at (16, 64): within noise, off
    gates_once: bool = False,
    # the level-2 merge's two 32x32x32 products on per-warp TF32 mma.sync (m16n8k8) instead of TileLang's T.gemm: warp
    # w forms columns 8 w .. + 8 of both (two 16-row tiles, four k-steps), its operands loaded from the fp32 matrices in
    # the instruction's fragment layout, as mma_level1 does at level 1; the second product reads back only the scratch
    # columns the warp wrote. Same operand rounding (TF32) as tc_level2's GEMMs. Checked against the matrix products
    # by scripts/prep_inverse_emulation.py; 128 registers, no spills. H200 (ablate.py spec prep4l2, 32768 tokens,
    # outputs bitwise equal): 73.6 -> 75.0 us at (2, 8), 159.8 -> 162.9 at (16, 16), 257.7 -> 261.8 at (16, 32),
    # 450.2 -> 462.1 at (16, 64); on a lone warpgroup (prep16l2) 73.3 -> 76.0 us: TileLang's T.gemm is faster here, off
    mma_level2: bool = False,
    # Z formed and stored (and Q loaded for it). False for forwards that form Z themselves (gdn_fwd.py z_in_kernel):
    # the prep then loads only K, forms K K^T, the inverse and A, and never writes z
    form_z: bool = True,
    # programmatic dependent launch (common/grid_dependency.py): the kernel may start while the one before it on
    # the stream finishes; every global access waits for that one's completion
    pdl: bool = False,
):
    assert BT == 64, "the blockwise inverse is written for 64-token chunks"
    assert pg_ag_one_loop or not z_rs, "z_rs forms Pg and Ag in one loop"
    assert not (mma_level1 and tc_level1), "one form of the level-1 merge"
    assert not (diag8 and tc_level1), "tc_level1 copies the 16x16 solve's columns"
    assert threads == 128 or not mma_level1, "mma_level1: one warp per (32-block, column half)"
    assert threads == 128 or not diag8, "diag8: one warp per 16-block"
    assert threads == 128 or not mma_level2, "mma_level2: one warp per 8 columns of the 32-wide product"
    num_tokens = T.dynamic("num_tokens")
    H = T.dynamic("num_qk_heads")
    HV = T.dynamic("num_v_heads")
    N1 = T.dynamic("num_seqs_plus_one")
    accum = "float32"

    @T.macro
    def store_az(pa_s, A, z, t0, hv, n_valid, n_store, full):
        """A[t0 + r, hv, :] <- pa_s[1, r, :] and z <- pa_s[0] for the chunk's rows (zeros over a padding-tail slot's):
        with tma_stores one TMA store each for a full chunk (not waited for here), else masked element stores (one
        condition per store, common/chunk_store.py)"""
        if tma_stores:
            T.fence_proxy_async()  # every writer's fence before the barrier TileLang puts ahead of the TMA
        if tma_stores and full:
            T.tma_copy(pa_s[1, :, :], A[t0:t0 + BT, hv, 0:BT])
            if form_z:
                T.tma_copy(pa_s[0, :, :], z[t0:t0 + BT, hv, 0:BT])
        else:
            for r, c in T.Parallel(BT, BT):
                if r < n_store:
                    A[t0 + r, hv, c] = T.if_then_else(r < n_valid, pa_s[1, r, c], T.cast(0, dtype))
            if form_z:
                for r, c in T.Parallel(BT, BT):
                    if r < n_store:
                        z[t0 + r, hv, c] = T.if_then_else(r < n_valid, pa_s[0, r, c], T.cast(0, dtype))

    @T.prim_func
    def gdn_chunk_prep(
        q: T.Tensor((num_tokens, H, K), dtype),
        k: T.Tensor((num_tokens, H, K), dtype),
        g: T.Tensor((num_tokens, HV), accum),
        beta: T.Tensor((num_tokens, HV), accum),
        cu_seqlens: T.Tensor((N1,), "int32"),
        g_cumsum: T.Tensor((num_tokens, HV), accum),
        A: T.Tensor((num_tokens, HV, BT), dtype),
        z: T.Tensor((num_tokens, HV, BT), dtype),
        scale: T.float32,
        num_slots: T.int32,  # slots of this launch: slot0, ..., slot0 + num_slots - 1 (at most 65535)
        slot0: T.int32,
        group: T.int32,  # HV / H, from the launcher: head indices are products, never divisions
        vpc: T.int32,  # v-heads per CTA, 1 <= vpc <= VPC_MAX, dividing group
        num_vblocks: T.int32,  # group / vpc
    ):
        # grid (block of v-heads in the group, qk-head, slot): a group's CTAs are neighbours in the launch order
        # (q and k from L2 after the first); the slot is blockIdx.z (launches of at most 65535 slots)
        with T.Kernel(num_vblocks, H, num_slots, threads=threads) as (jb, hq, bz):
            grid_dependency(pdl)
            # shared memory 53,760 B per CTA (67,584 with tc_level1); registers bound by min_blocks
            T.annotate_min_blocks_per_sm(min_blocks)
            hv0 = hq * group + jb * vpc
            slot = slot0 + bz
            num_seqs = N1 - 1

            seq = T.alloc_var("int32", init=0)
            hi = T.alloc_var("int32", init=0)
            seq_end = T.alloc_var("int32", init=0)
            t0 = chunk_of_slot(cu_seqlens, num_seqs, num_tokens, slot, BT, seq, hi, seq_end)
            # rows [t0, t0 + n_valid) belong to the chunk; a slot of the padding tail owns rows up to T
            n_valid, n_tail = chunk_rows(t0, seq, seq_end, num_seqs, num_tokens, BT)
            n_store = T.max(n_valid, n_tail)  # at most one of the two is nonzero
            full = seq_end - t0 >= BT  # on the unclamped difference (common/chunk_load.py)

            g_all = T.alloc_shared((VPC_MAX, BT), accum)  # the CTA's v-heads' gates and betas, loaded at the start
            b_all = T.alloc_shared((VPC_MAX, BT), accum)
            m_s = T.alloc_shared((BT, BT + ROW_PAD), accum)  # Q K^T on and below the diagonal, K K^T above
            inv_s = T.alloc_shared((BT, BT + ROW_PAD), accum)  # (I + L)^-1 on and below; [0:32, 32:64] scratch
            # [0]: scale * Gamma * (Q K^T), then Z; [1]: Gamma * A * beta_col, then A (one buffer, so that the
            # shared-memory planner can lay Q's buffer over it)
            pa_s = T.alloc_shared((2, BT, BT), dtype)
            gc_s = T.alloc_shared((BT,), accum)  # this v-head's gates, summed in place (or copied summed: gates_once)
            b_s = T.alloc_shared((BT,), accum)
            k_s = T.alloc_shared((BT, K), dtype)
            if form_z:
                q_s = T.alloc_shared((BT, K), dtype)
            kk = T.alloc_fragment((BT, BT), accum)
            qk = T.alloc_fragment((BT, BT), accum)
            acc16 = T.alloc_fragment((2, 16, 16), accum)
            acc32 = T.alloc_fragment((32, 32), accum)
            if tc_level1:
                # the level-1 merge's block-diagonal operands, off-diagonal 16-blocks zero: A1[16q + j, 16p + r] =
                # M[32p + j, 32p + 16 + r] for q = p (T_lo's K K^T part, transposed), and the diagonal inverses
                # D_lo (blocks 0, 2 of the solve) and D_hi (blocks 1, 3)
                a1_s = T.alloc_shared((32, 32 + ROW_PAD), accum)
                dlo_s = T.alloc_shared((32, 32 + ROW_PAD), accum)
                dhi_s = T.alloc_shared((32, 32 + ROW_PAD), accum)
            col = T.alloc_local((16,), accum)  # one column of a diagonal block's inverse
            if diag8:
                yv = T.alloc_local((2,), accum)  # a thread's two outputs of the 8x8 merge
            if mma_level1 or mma_level2:
                # one m16n8k8 TF32 step's fragments (PTX ISA layout; g = lane / 4, t = lane % 4): A's rows g, g + 8
                # and columns t, t + 4; B's rows t, t + 4 and column g; C's rows g, g + 8 and columns 2t, 2t + 1
                # (mma_level2: two 16-row tiles' A and C fragments)
                fa = T.alloc_local((8 if mma_level2 else 4,), accum)
                fb = T.alloc_local((2,), accum)
                fc = T.alloc_local((8 if mma_level2 else 4,), accum)
            if z_rs and form_z:
                pg_frag = T.alloc_fragment((BT, BT), dtype)  # Pg in the q dtype: the Z wgmma's A operand
            if tma_loads:
                bar_qk = T.alloc_barrier(32)  # Q and K of a full chunk landed (warp 0 arrives; one phase per CTA)

            # ---- loads, zero-filled past the chunk's valid rows (and past the CTA's v-heads): q and k together.
            # The gates first: TileLang's shared-memory planner places buffers in the order of their first use, and
            # so puts M, the inverse and pa_s over Q and K's space once the GEMMs have read them (53,760 B; with the
            # gates after Q and K it needed 68,608)
            for u, r in T.Parallel(VPC_MAX, BT):
                g_all[u, r] = T.if_then_else(r < n_valid and u < vpc, g[t0 + r, hv0 + u], 0.0)
                b_all[u, r] = T.if_then_else(r < n_valid and u < vpc, beta[t0 + r, hv0 + u], 0.0)
            if gates_once:
                T.cumsum(g_all, dim=1)
            if tma_loads and full:
                if T.get_thread_binding() < 32:
                    T.tma_copy(k[t0:t0 + BT, hq, 0:K], k_s, barrier=bar_qk[0], leader_scope_threads=32)
                    if form_z:
                        T.tma_copy(q[t0:t0 + BT, hq, 0:K], q_s, barrier=bar_qk[0], leader_scope_threads=32)
                    T.barrier_arrive(bar_qk[0])
                T.barrier_wait(bar_qk[0], 0)
            else:
                for r, c in T.Parallel(BT, K):
                    k_s[r, c] = T.if_then_else(r < n_valid, k[t0 + r, hq, c], T.cast(0, dtype))
                if form_z:
                    for r, c in T.Parallel(BT, K):
                        q_s[r, c] = T.if_then_else(r < n_valid, q[t0 + r, hq, c], T.cast(0, dtype))

            # ---- M: Q K^T on and below the diagonal, K K^T above it (the two accumulators share a layout)
            T.gemm(k_s, k_s, kk, transpose_B=True, clear_accum=True)
            if form_z:  # (without Z only M's strictly upper part, K K^T, is read)
                T.gemm(q_s, k_s, qk, transpose_B=True, clear_accum=True)
                for r, c in T.Parallel(BT, BT):
                    kk[r, c] = T.if_then_else(r >= c, qk[r, c], kk[r, c])
            T.copy(kk, m_s[:, 0:BT])
            # the inverse's strictly upper 16-blocks inside its diagonal 32-blocks are read as zeros by the
            # level-2 merge; nothing else writes them
            for p, r, c in T.Parallel(2, 16, 16):
                inv_s[32 * p + r, 32 * p + 16 + c] = 0.0
            if tc_level1:
                for jj, rr in T.Parallel(32, 32):
                    a1_s[jj, rr] = T.if_then_else(jj // 16 == rr // 16,
                                                  m_s[32 * (rr // 16) + jj % 16, 32 * (rr // 16) + 16 + rr % 16], 0.0)
                for jj, cc in T.Parallel(32, 32):
                    if jj // 16 != cc // 16:
                        dlo_s[jj, cc] = 0.0
                        dhi_s[jj, cc] = 0.0

            tx = T.get_thread_binding()
            for u in T.serial(vpc):
                hv = hv0 + u
                for r in T.Parallel(BT):
                    gc_s[r] = g_all[u, r]
                    b_s[r] = b_all[u, r]
                if not gates_once:
                    T.cumsum(gc_s, dim=0)

                # ---- diagonal 16x16 blocks: thread 16 b + c solves T_bb x = e_c row by row, in registers,
                # T[m, j] = beta_m M[j, m] (m > j); with diag8 from 8x8 blocks
                if diag8:
                    diag8_blocks(m_s, inv_s, b_s, col, yv, tx, inv_s, 32)
                elif tx < 64:
                    solve_diag_column(m_s, inv_s, b_s, col, tx, 16)
                    if tc_level1:  # block b = tx // 16 of the solve is D_lo (b even) or D_hi (b odd) of 32-block b // 2
                        if (tx // 16) % 2 == 0:
                            for m in T.unroll(16):
                                dlo_s[16 * (tx // 32) + m, 16 * (tx // 32) + tx % 16] = col[m]
                        else:
                            for m in T.unroll(16):
                                dhi_s[16 * (tx // 32) + m, 16 * (tx // 32) + tx % 16] = col[m]

                # ---- level 1: X = -D_hi T_lo D_lo for the 16-blocks (1,0) and (3,2); T_lo D_lo in inv_s[0:32, 32:48]
                if mma_level1:
                    mma_level1_merge(m_s, inv_s, b_s, fa, fb, fc, tx, inv_s, 32)
                elif tc_level1:
                    # block p of the product sits at [16p, 16p + 16) x [16p, 16p + 16) of the 32x32 result, zeros
                    # around it (the operands are block diagonal); scaled by beta, it is the second product's B
                    T.gemm(a1_s[:, 0:32], dlo_s[:, 0:32], acc32, transpose_A=True, clear_accum=True)
                    for rr, cc in T.Parallel(32, 32):
                        beta_r = b_s[32 * (rr // 16) + 16 + rr % 16]
                        inv_s[rr, 32 + cc] = beta_r * acc32[rr, cc]
                    T.gemm(dhi_s[:, 0:32], inv_s[0:32, 32:64], acc32, clear_accum=True)
                    for rr, cc in T.Parallel(32, 32):
                        if rr // 16 == cc // 16:  # block p = rr // 16 of X_lo, into the inverse at (32p + 16, 32p)
                            inv_s[32 * (rr // 16) + 16 + rr % 16, 32 * (rr // 16) + cc % 16] = -acc32[rr, cc]
                else:
                    T.clear(acc16)
                    for j in T.unroll(16):
                        for p, r, c in T.Parallel(2, 16, 16):
                            acc16[p, r, c] += m_s[32 * p + j, 32 * p + 16 + r] * inv_s[32 * p + j, 32 * p + c]
                    for p, r, c in T.Parallel(2, 16, 16):
                        beta_r = b_s[32 * p + 16 + r]
                        inv_s[16 * p + r, 32 + c] = beta_r * acc16[p, r, c]
                    T.clear(acc16)
                    for j in T.unroll(16):
                        for p, r, c in T.Parallel(2, 16, 16):
                            acc16[p, r, c] -= inv_s[32 * p + 16 + r, 32 * p + 16 + j] * inv_s[16 * p + j, 32 + c]
                    for p, r, c in T.Parallel(2, 16, 16):
                        inv_s[32 * p + 16 + r, 32 * p + c] = acc16[p, r, c]

                # ---- level 2: X = -D_hi T_lo D_lo for the 32-block (1,0); T_lo D_lo in inv_s[0:32, 32:64]
                if mma_level2:  # both products on per-warp TF32 mma.sync
                    mma_level2_merge(m_s, inv_s, b_s, fa, fb, fc, tx, inv_s, 32)
                elif tc_level2:  # both products on tensor cores (TF32 mma.sync: operands rounded to 10 mantissa bits)
                    tc_level2_merge(m_s, inv_s, b_s, acc32, inv_s, 32)
                else:
                    T.clear(acc32)
                    for j in T.unroll(32):
                        for r, c in T.Parallel(32, 32):
                            acc32[r, c] += m_s[j, 32 + r] * inv_s[j, c]
                    for r, c in T.Parallel(32, 32):
                        beta_r = b_s[32 + r]
                        inv_s[r, 32 + c] = beta_r * acc32[r, c]
                    T.clear(acc32)
                    for j in T.unroll(32):
                        for r, c in T.Parallel(32, 32):
                            acc32[r, c] -= inv_s[32 + r, 32 + j] * inv_s[j, 32 + c]
                    for r, c in T.Parallel(32, 32):
                        inv_s[32 + r, c] = acc32[r, c]

                # ---- Z = Pg Ag, Pg and Ag formed in kk and qk (the loads let-bound before the selects: inside a
                # select they became branches of their own, docs/fwd_profile.md); without form_z only A
                if tma_stores:  # the previous v-head's stores have read pa_s
                    T.tma_store_wait()
                if form_z:
                    if pg_ag_one_loop:
                        for r, c in T.Parallel(BT, BT):
                            gamma = T.exp2((gc_s[r] - gc_s[c]) * LOG2E)
                            qk_rc = m_s[r, c]
                            a_beta = inv_s[r, c] * b_s[c]
                            kk[r, c] = T.if_then_else(r >= c, scale * gamma * qk_rc, 0.0)
                            qk[r, c] = T.if_then_else(r >= c, gamma * a_beta, 0.0)
                        if z_rs:
                            T.copy(kk, pg_frag)
                        else:
                            T.copy(kk, pa_s[0, :, :])
                        T.copy(qk, pa_s[1, :, :])
                    else:
                        for r, c in T.Parallel(BT, BT):
                            gamma = T.exp2((gc_s[r] - gc_s[c]) * LOG2E)
                            qk_rc = m_s[r, c]
                            kk[r, c] = T.if_then_else(r >= c, scale * gamma * qk_rc, 0.0)
                        T.copy(kk, pa_s[0, :, :])
                        for r, c in T.Parallel(BT, BT):
                            gamma = T.exp2((gc_s[r] - gc_s[c]) * LOG2E)
                            a_beta = inv_s[r, c] * b_s[c]
                            kk[r, c] = T.if_then_else(r >= c, gamma * a_beta, 0.0)
                        T.copy(kk, pa_s[1, :, :])
                    if z_rs:
                        T.fence_proxy_async()  # Ag's generic-proxy writes before the wgmma's async-proxy reads
                        T.sync_threads()
                        T.wgmma_gemm(pg_frag, pa_s[1, :, :], kk, clear_accum=True)
                        for r, c in T.Parallel(BT, BT):  # A, while the tensor cores form Z
                            a_rc = inv_s[r, c]
                            qk[r, c] = T.if_then_else(r >= c, a_rc, 0.0)
                        T.wait_wgmma(0)
                        # the accumulator's reads stay after the wait (nvcc may not move them above it)
                        T.warpgroup_fence_operand(kk, num_regs=BT * BT // threads)
                        T.sync_threads()  # every warp's wgmma has read Ag before A overwrites it
                        T.copy(kk, pa_s[0, :, :])  # Z
                        T.copy(qk, pa_s[1, :, :])  # A in the q dtype
                    else:
                        T.gemm(pa_s[0, :, :], pa_s[1, :, :], kk, clear_accum=True)
                        T.copy(kk, pa_s[0, :, :])  # Z, through Pg's buffer (its last read was that GEMM)
                if not (form_z and z_rs):  # A (z_rs formed it beside Z's wgmma)
                    for r, c in T.Parallel(BT, BT):
                        a_rc = inv_s[r, c]
                        kk[r, c] = T.if_then_else(r >= c, a_rc, 0.0)
                    T.copy(kk, pa_s[1, :, :])  # A in the q dtype

                # ---- masked stores: the chunk's rows, or zeros over a piece of the padding tail
                store_az(pa_s, A, z, t0, hv, n_valid, n_store, full)
                for r in T.Parallel(BT):
                    if r < n_store:
                        g_cumsum[t0 + r, hv] = T.if_then_else(r < n_valid, gc_s[r], 0.0)
            if tma_stores:  # the last stores have read pa_s before the CTA's shared memory goes
                T.tma_store_wait()

    return gdn_chunk_prep
