"""Fused chunked GDN forward (SM90) without the chunk prep: the inverse, the gates' cumsum and the intra-chunk scores
are formed inside the kernel, a ring stage ahead of the state's chain, from q, k, v, the raw log decays g and beta.

gdn_fwd_rs.py's walk and register layout (the state as S^T [BV, K] in the math warpgroups' registers, 64 V rows
each, S~^T and the chain's products register-sourced), with the chunk's work split as FlashInfer's Hopper kernel
splits it (read, not copied: docs/speed_plan.md Ready 1): the producer warp that loads K forms the chunk's cumsum
gc of g (a shuffle scan), and an auxiliary warpgroup forms, per chunk,

    M_g = Gamma^T * (K K^T) above the diagonal, Gamma^T[i, j] = exp(gc_j - gc_i) (fp32, where the solve reads it)
    A_g = (I + strictLower(diag(beta) M_g^T))^-1 = Gamma * A0            (the prep's blockwise solve, fp32)
    G   = A_g * beta_col                                               [BT, BT] bf16
    P   = scale * Gamma * (Q K^T), i >= j                              [BT, BT] bf16
    gamma = exp(gc), r = exp(gc_last - gc), scale * gamma              (per row)

(Gamma[i, j] = exp(gc_i - gc_j) on and below the diagonal, A0 the ungated inverse of chunk_prep.py.)
Each math warpgroup runs its 64 V rows' chain with the inverse applied on it (three products where gdn_fwd_rs.py
has two, but no X, A or Z through HBM):

    SK  = S~^T K^T                             [V, BT]
    W^T = V^T - SK diag(gamma)                 [V, BT]   (the residual)
    U^T = W^T G^T                              [V, BT]   (the chunk's new values, U = A_g diag(beta) W)
    S^T = gamma_last S^T + (U^T diag(r)) K     [V, K]
    O^T = (S~^T Q^T) diag(scale gamma) + U^T P^T

(docs/gdn_chunk_derivation.md, "Two-GEMM chain": S += K^T A diag(r beta) W there is K^T diag(r) U here, since
A_g = diag(e^gc) A0 diag(e^gc)^-1.) So the forward reads q, k, v, g and beta once and writes o: the chunk prep's
second read of q and k and the A / Z round trip (about half the bytes of the two kernels at many sequences) are gone.
A and gc are not stored: a training forward runs the prep for them (the backward reads them): by default the whole
prep and the fused forward, with FLASHQLA_TRAIN_NOPREP=1 the prep without Z and this kernel (csrc/ops/gdn_fwd.cpp).

Warpgroups: the math warpgroups (two at BV = 128, one at 64; with p_in_math, the shipped row, each also forms P
beside its update); the auxiliary warpgroup (the inverse, G, the gates, and without p_in_math P); three producer
warps (K, g and beta, in a ring of k_stages stages; V; Q, in two) filling the ring by TMA (element copies for a
partial chunk), and a storer warp storing O from a two-stage buffer. The parameters are gdn_fwd_rs.py's (A and z are not
read; g takes g_cumsum's place: the raw log decays).
"""

import tilelang.language as T
from tilelang.layout import make_swizzled_layout

from common.chunk_load import load_gate_cumsum_beta, load_rows
from common.chunk_store import store_o_walk, zero_padding_tail
from common.grid_dependency import grid_dependency
from common.seq_index import seq_bound
from common.state_walk import load_start_state, store_end_state
from common.unit_lower_inverse import RingStage, diag8_blocks, mma_level1_merge, mma_level2_merge, tc_level2_merge
from common.walk_dims import walk_dims

LOG2E = 1.4426950408889634
# the bound on the gates' exponents gc_r - gc_c (natural log) before exp: e^80 is finite in fp32 (e^88.7 is not), so
# a masked element is 0, never inf * 0; it binds on a kept element only where gates grow by more than 80 within one
# chunk, whose state (times e^80 per chunk) overflows fp32 by the next chunk
GATE_EXP_MAX = 80.0
ROW_PAD = 4  # floats of padding per row of the inverse's fp32 matrices (as in chunk_prep.py)
AUX_BARRIER = 15  # the auxiliary warpgroup's own named barrier
MATH_BARRIER = 13  # the math warpgroups' own named barriers (13, 14; p_in_math)
MATH_PAIR_BARRIER = 12  # both math warpgroups (p_split)


def gdn_fwd_noprep_sm90(
    # task config
    dtype: str = "bfloat16",
    K: int = 128,
    V: int = 128,
    # kernel config
    BT: int = 64,
    # the V slice of a CTA: 128 (two math warpgroups) or 64 (one; two CTAs per segment and v-head each forming the
    # inverse)
    BV: int = 128,
    # registers per thread: the math warpgroups, the auxiliary warpgroup (the solve needs at least 104), the producer
    # and storer warps; their sum over the warpgroups at most 512
    regs: tuple = (192, 104, 24),
    # SK in two 32-column halves (16 registers of SK live instead of 32: the math warpgroups at 192 registers without
    # wgmma serialization, gdn_fwd_rs.py sk_halves)
    sk_halves: bool = True,
    # each math warpgroup forms P = scale * Gamma * (Q K^T) itself (an SS product issued beside the update, the gating
    # in its registers, into a buffer of its own) instead of the auxiliary warpgroup: the math warpgroups wait for the
    # auxiliary one's G for most of a chunk, and P does not depend on the inverse
    p_in_math: bool = False,
    # stages of the ring of K, g's cumsum and beta (V and Q keep two): with three the producer warp loads chunk i + 3's
    # K when chunk i is freed, so the auxiliary warpgroup finds chunk i + 2's ready as soon as the math warpgroups free
    # its output stage (with two, the load's latency after the math warpgroups free K sat between them: Nsight
    # Compute, H100, (32, 32) 8192x4, the auxiliary warpgroup waited for K a quarter of its time and the math
    # warpgroups for G 28 % of theirs)
    k_stages: int = 2,
    # with p_in_math, the math warpgroups free the auxiliary warpgroup's output stage (G, gates) once they have read it
    # (after U and the per-row gates' passes) instead of at the next chunk's first wait: the auxiliary warpgroup,
    # which waited on it 12 % of its time with k_stages=3 (Nsight Compute, H100), then runs up to two chunks ahead
    x_free_early: bool = False,
    # the producer warp forms g's cumsum in log2 units (g * log2 e), so that every gate's exponential is one exp2 of a
    # difference: one multiply per element fewer in M's and P's gating passes
    log2_gates: bool = False,
    # with p_in_math, each math warpgroup forms half of P's columns (Q K^T against 32 of the chunk's keys, half the
    # gating) into one shared two-stage buffer, and both sync on a named barrier before their O2 reads the whole P:
    # without it each forms the whole P (Nsight Compute: its gating was 16 % of a math warpgroup's time)
    p_split: bool = False,
    # the solve's 8x8 step and level-1 merge with their intermediate Y moved between lanes by shuffles instead of a
    # scratch in shared memory (common/unit_lower_inverse.py's `shfl`): the same values, 4 of the auxiliary
    # warpgroup's 17 syncs per chunk fewer
    solve_shfl: bool = False,
    # the solve's level-2 merge by mma.sync per warp with its Y moved by shuffles (mma_level2_merge with shfl) instead of
    # T.gemm with Y through shared memory (tc_level2_merge); the merges' scratch block is then zeroed once. Off: no
    # faster on an H100 (33rd session, benchmarks/results/s33)
    l2_shfl: bool = False,
    # the 8x8 solves start their columns from an identity written to shared memory beside the zero fill
    # (unit_lower_inverse.py's `eye`) instead of from values formed in the loop, which ptxas hoisted, spilled and
    # reloaded on the solve's chain (Nsight Compute, 33rd session). Off: bitwise equal and no faster on an H100
    # (benchmarks/results/s33, s33_8)
    solve_eye: bool = False,
    # M's gating pass without its mask (c > r): the solve and the merges read M only above the diagonal, and the
    # clamped exponent keeps what lies below finite or at worst infinite where nothing reads it. The mask's 32 0/1
    # factors per thread are loop invariants that ptxas hoisted out of the chunk loop, with G's 32 (g_nomask): the
    # auxiliary warpgroup's register pressure, its spills reloaded every chunk (33rd session, the SASS before its loop)
    m_nomask: bool = False,
    # G's pass without its mask (r >= c): the inverse's upper triangle is exactly zero where nothing writes the merges'
    # scratch block (solve_shfl and l2_shfl, the block zeroed once), the rest of it zeroed each chunk or formed as exact
    # zeros by the column solves
    g_nomask: bool = False,
    # the inverse's zeros above its 8x8 diagonal blocks written once before the chunk loop instead of each chunk (with
    # solve_shfl and l2_shfl nothing else writes there: the column solves write the diagonal blocks, the merges the
    # blocks below them), one shared-memory phase and its warpgroup sync fewer per chunk. Off, with beta_ring and
    # g_direct: bitwise equal and no faster (34th session, H100, benchmarks/results/s34: 12 -> 9 syncs per chunk,
    # 0.563 -> 0.555-0.561 ms at (32, 32) 8192x4)
    zero_once: bool = False,
    # the solve and G's pass read beta from the ring stage that the producer warp filled (b_s[i % KS]) instead of from
    # a copy the auxiliary warpgroup made at the top of each chunk: no write there, so no warpgroup sync before the
    # solve may read it
    beta_ring: bool = False,
    # G = A_g * beta_col written to its stage (bf16) by each step of the solve as it writes its block of the inverse,
    # instead of by a pass over the whole inverse after the last merge (one warpgroup sync and the pass's shared
    # loads fewer per chunk); the blocks above the 8x8 diagonal blocks of both stages zeroed once (zero_once)
    g_direct: bool = False,
    # both math warpgroups on one code path over 128-row fragments (the V-row products split by rows, P's product by
    # columns as p_split does) instead of math_half emitted once per warpgroup: half the math warpgroups' code, as
    # instruction fetch became the stall common to every role (34th session, Nsight Compute: no_inst 40-53 % of the
    # samples at the top of each math warpgroup's loop). Needs common/fence_fix.py's rewrite of the generated code
    # (TileLang 0.1.15 fences twice a two-warpgroup accumulator), which codegen.py and ablate.py register. 35th
    # session, H100: o and the final state bitwise equal in the op at seven shapes, the op's forward 0.556 -> 0.521 ms
    # at (32, 32) 8192x4, 0.165 -> 0.154 at 2048x4 (benchmarks/results/s35/README.md): on in the variants row
    math_pair: bool = False,
    # the auxiliary warpgroup forms chunk i + 1's M during chunk i's solve: K K^T issued at the top of chunk i (its
    # wgmma under the gates and the 8x8 step), gated in registers between the 8x8 step and the level-1 merge (its exps
    # and loads in the latency of the merges' shared loads, shuffles and mma chains), stored to m_s once the level-2
    # merge has read chunk i's (the first chunk's M before the loop). The same products and passes in another order:
    # o bitwise equal. K K^T's accumulator (32 registers) stays live through the solve; the gating pass and the
    # product's wait were on the chain before the solve (Nsight Compute, 33rd session: M's gating 23 % of the
    # auxiliary warpgroup's time, which sets the period: the math warpgroups' chain alone takes 2.5-2.7 us per chunk
    # of the 4)
    m_ahead: bool = False,
    # the producer warp that forms g's cumsum also forms the per-row gates (gamma, scale * gamma, r) from the same fp32
    # values into stages of the K ring (the math warpgroups read them before they free the stage), instead of the
    # auxiliary warpgroup's first pass each chunk (64 of its threads: three exps and shared loads before the solve, and
    # without beta_ring the warpgroup sync after them): the same values, o bitwise equal. Needs log2_gates
    gates_in_loader: bool = False,
    # programmatic dependent launch (common/grid_dependency.py)
    pdl: bool = False,
):
    assert BV in (64, 128) and V == 128 and K == 128 and BT == 64 and k_stages in (2, 3)
    assert p_in_math or not x_free_early, "without p_in_math O2 reads the auxiliary stage's P across the back edge"
    assert p_in_math or not p_split
    assert BV == 128 or not p_split, "one math warpgroup forms the whole P"
    assert not g_nomask or (solve_shfl and l2_shfl), "the merges' scratch lies in the inverse's upper triangle"
    assert not zero_once or (solve_shfl and l2_shfl), "the merges' scratch lies in the inverse's upper triangle"
    assert not g_direct or zero_once, "G's blocks above the diagonal blocks are written once"
    assert not math_pair or (BV == 128 and p_in_math and p_split and sk_halves and x_free_early), \
        "math_pair is the shipped row's math on one code path"
    assert not m_ahead or (p_in_math and m_nomask), "K K^T's accumulator is the only product of the solve's chunk"
    assert not gates_in_loader or log2_gates, "the producer warp forms the gates as exp2 of the cumsum"
    KS = k_stages
    GS = KS if gates_in_loader else 2  # the per-row gates' stages: the K ring's, or the auxiliary warpgroup's two
    NV = V // BV
    VH = 64  # a math warpgroup's V rows
    NMATH = BV // VH  # math warpgroups
    NREG_MATH, NREG_AUX, NREG_LOAD = regs
    assert NMATH * NREG_MATH + NREG_AUX + NREG_LOAD <= 512
    assert NREG_AUX >= (88 if p_in_math else 104), \
        "the auxiliary warpgroup holds K K^T (32 registers), the solve's fragments and (without p_in_math) Q K^T"
    PT = 128 * (NMATH + 1)  # the producer warps' first thread
    PW = BT // 2 if p_split else BT  # P's columns formed per math warpgroup (p_in_math)
    num_tokens, H, HV, N1, NS, NH, NSEG, NGRID, NROWS = walk_dims()  # common/walk_dims.py
    GX = GATE_EXP_MAX * LOG2E if log2_gates else GATE_EXP_MAX  # the clamp in g_s's units

    def exp_g(x):
        """e^x for x in g_s's units (log2 units with log2_gates)"""
        return T.exp2(x) if log2_gates else T.exp2(x * LOG2E)

    accum = "float32"

    @T.macro
    def gate_p(p_frag, g_s, st, scale, c_off, width):
        """p_frag <- scale * Gamma * p_frag, Gamma[r, c] = exp(gc_r - gc_c) on and below the diagonal, 0 above, from
        the cumsum stage g_s[st]. The exponent is clamped at GATE_EXP_MAX (finite where the product masks it, above
        the diagonal, for gates of either sign; below it the clamp binds only where a gate factor would exceed
        e^GATE_EXP_MAX, whose fp32 state overflows within the next chunk anyway) and the product masks the result.
        One min per element, as the kernel had when it assumed g <= 0: a select of the exponent instead (exact, the
        first fix) made the period 17 % longer (H100, 0.675 -> 0.788 ms at (32, 32) 8192x4), and a select
        over shared loads lowers to a branch per element. p_frag holds P's columns c_off .. c_off + width."""
        for r, c in T.Parallel(BT, width):
            g_r = g_s[st, r]
            g_c = g_s[st, c + c_off]
            p_frag[r, c] = (scale * exp_g(T.min(g_r - g_c, GX)) * T.cast(r >= c + c_off, accum)
                            * p_frag[r, c])

    @T.macro
    def gate_m(kk_frag, g_s, st):
        """kk_frag <- M gated above the diagonal, where the solve reads it (T[m, j] = beta_m M[j, m], m > j):
        M[r, c] exp(gc_c - gc_r), so that the solve forms the gated inverse A_g directly (gate_p's form and clamp);
        with m_nomask not masked (nothing reads below the diagonal), else masked by a product"""
        for r, c in T.Parallel(BT, BT):
            g_r = g_s[st, r]
            g_c = g_s[st, c]
            if m_nomask:
                kk_frag[r, c] = exp_g(T.min(g_c - g_r, GX)) * kk_frag[r, c]
            else:
                kk_frag[r, c] = exp_g(T.min(g_c - g_r, GX)) * T.cast(c > r, accum) * kk_frag[r, c]

    @T.macro
    def release_chunk(o_frag, o_s, x_free, o_full, o_free, j, v0, emit_o, rows):
        """Chunk j's products are done: its auxiliary stage (G, P, gates) is free (unless freed earlier:
        x_free_early), and its O^T (rows V rows from v0) goes to the storer warp once it stored chunk j - 2's"""
        if not x_free_early:
            T.barrier_arrive(x_free[j % 2])
        if emit_o:
            T.barrier_wait(o_free[j % 2], (j // 2 + 1) % 2)
            for a, t in T.Parallel(rows, BT):
                o_s[j % 2, t, v0 + a] = o_frag[a, t]
            T.fence_proxy_async()
            T.barrier_arrive(o_full[j % 2])

    @T.macro
    def math_half(vh, rows, pol, pw, ppol, c0, s_frag, st_frag, sk_frag, wt_frag, u_frag, ut_frag, o_frag, p_frag,
                  q_s, k_s, v_s, g_s, ga_s, pg_s, pm_s, gam_s, gam2_s, r_s, o_s, scale, full_k, empty_k, full_v,
                  empty_v, full_qz, empty_qz, x_ready, x_free, o_full, o_free, h0, cp_h0, cp_out, ht, hv, seg, n, is_m,
                  n_iter, flags, use_h0, state_v_first, store_ht, emit_o, warmup, num_seqs):
        """One math warpgroup's walk over the segment: S^T of the CTA's V rows [v0, v0 + 64), v0 = 64 * vh (V rows
        c0 + v0 ... of the head), P's columns [pw vh, pw vh + pw) with p_split; with math_pair both warpgroups' walk
        on one code path (vh = 0, rows = 128, the V-row products split by rows: pol; Q K^T by columns, pw = 64:
        ppol, so that warpgroup w forms P's columns 32 w .. as p_split does)"""
        v0 = vh * VH
        vg = c0 + v0
        has_prev = flags % 2 == 1  # start from cp_h0: not the sequence's first segment
        is_last = (flags // 2) % 2 == 1  # the sequence's last segment stores the final state
        load_start_state(s_frag, rows, K, vg, hv, seg, n, is_m, n_iter, has_prev, warmup, use_h0, num_seqs,
                         state_v_first, h0, cp_h0)
        # every wait is a wait for all (gdn_fwd_rs.py: ptxas serializes the kernel's wgmma otherwise); O2 is left in
        # flight across the back edge and completes at the next chunk's first wait
        for i in T.serial(n_iter):
            T.barrier_wait(full_k[i % KS], (i // KS) % 2)
            T.barrier_wait(x_ready[i % 2], (i // 2) % 2)
            T.copy(s_frag, st_frag)
            # SK = S~^T K^T (with sk_halves its first 32 columns)
            if sk_halves:
                T.wgmma_gemm(st_frag, k_s[i % KS, 0:BT // 2, :], sk_frag, transpose_B=True, clear_accum=True,
                             policy=pol)
            else:
                T.wgmma_gemm(st_frag, k_s[i % KS, :, :], sk_frag, transpose_B=True, clear_accum=True, policy=pol)
            T.wait_wgmma(0)  # SK, and chunk i - 1's O2
            if i > 0:
                release_chunk(o_frag, o_s, x_free, o_full, o_free, i - 1, v0, emit_o, rows)
            # O1 = S~^T Q^T, under W and U
            T.barrier_wait(full_qz[i % 2], (i // 2) % 2)
            T.wgmma_gemm(st_frag, q_s[i % 2, :, :], o_frag, transpose_B=True, clear_accum=True, policy=pol)
            decay = gam_s[i % GS, BT - 1]
            for a, b in T.Parallel(rows, K):
                s_frag[a, b] *= decay
            # W^T = V^T - SK diag(gamma)
            T.barrier_wait(full_v[i % 2], (i // 2) % 2)
            if sk_halves:
                for a, t in T.Parallel(rows, BT // 2):
                    wt_frag[a, t] = v_s[i % 2, t, v0 + a] - gam_s[i % GS, t] * sk_frag[a, t]
                T.wgmma_gemm(st_frag, k_s[i % KS, BT // 2:BT, :], sk_frag, transpose_B=True, clear_accum=True,
                             policy=pol)
                T.wait_wgmma(0)  # O1 and SK's second half
                for a, t in T.Parallel(rows, BT // 2):
                    wt_frag[a, BT // 2 + t] = (v_s[i % 2, BT // 2 + t, v0 + a]
                                               - gam_s[i % GS, BT // 2 + t] * sk_frag[a, t])
            else:
                for a, t in T.Parallel(rows, BT):
                    wt_frag[a, t] = v_s[i % 2, t, v0 + a] - gam_s[i % GS, t] * sk_frag[a, t]
            T.barrier_arrive(empty_v[i % 2])  # V read (W^T)
            # U^T = W^T G^T
            T.wgmma_gemm(wt_frag, ga_s[i % 2, :, :], u_frag, transpose_B=True, clear_accum=True, policy=pol)
            T.wait_wgmma(0)  # O1 and U
            if not p_in_math:
                T.barrier_arrive(empty_qz[i % 2])  # Q read (O1)
            for a, t in T.Parallel(rows, BT):
                o_frag[a, t] *= gam2_s[i % GS, t]
            for a, t in T.Parallel(rows, BT):
                ut_frag[a, t] = u_frag[a, t]
                wt_frag[a, t] = u_frag[a, t] * r_s[i % GS, t]
            if x_free_early:
                T.barrier_arrive(x_free[i % 2])  # G (U) and the gates (W^T, O1's scale, r) read
            # S^T += (U^T diag(r)) K
            T.wgmma_gemm(wt_frag, k_s[i % KS, :, :], s_frag, policy=pol)
            if p_in_math:
                if p_split:
                    # Q K^T against this warpgroup's half of the keys beside the update, then its half of P into
                    # the shared stage (chunk i - 2's O2 of both warpgroups read it: each completed at its first
                    # wait of chunk i - 1, ahead of that chunk's pair barrier)
                    T.wgmma_gemm(q_s[i % 2, :, :], k_s[i % KS, pw * vh:pw * vh + pw, :], p_frag, transpose_B=True,
                                 clear_accum=True, policy=ppol)
                    T.wait_wgmma(0)  # the update and Q K^T
                    gate_p(p_frag, g_s, i % KS, scale, pw * vh, pw)
                    T.barrier_arrive(empty_k[i % KS])  # K (SK, the update, Q K^T) and the cumsum read
                    T.barrier_arrive(empty_qz[i % 2])  # Q read (O1, Q K^T)
                    T.copy(p_frag, pm_s[i % 2, :, pw * vh:pw * vh + pw])
                    T.fence_proxy_async()
                    T.sync_threads(MATH_PAIR_BARRIER, 256)  # both halves of P written before either product reads it
                    # O^T += U^T P^T, under the next chunk's S~ and SK
                    T.wgmma_gemm(ut_frag, pm_s[i % 2, :, :], o_frag, transpose_B=True, policy=pol)
                else:
                    # Q K^T beside the update, then P in this warpgroup's own buffer (chunk i - 1's O2 has read it: it
                    # completed at this chunk's first wait)
                    T.wgmma_gemm(q_s[i % 2, :, :], k_s[i % KS, :, :], p_frag, transpose_B=True, clear_accum=True,
                                 policy=ppol)
                    T.wait_wgmma(0)  # the update and Q K^T
                    gate_p(p_frag, g_s, i % KS, scale, 0, BT)
                    T.barrier_arrive(empty_k[i % KS])  # K (SK, the update, Q K^T) and the cumsum read
                    T.barrier_arrive(empty_qz[i % 2])  # Q read (O1, Q K^T)
                    T.copy(p_frag, pm_s[vh, :, :])
                    T.fence_proxy_async()
                    T.sync_threads(MATH_BARRIER + vh, 128)  # the warpgroup's P whole before its product reads it
                    # O^T += U^T P^T, under the next chunk's S~ and SK
                    T.wgmma_gemm(ut_frag, pm_s[vh, :, :], o_frag, transpose_B=True, policy=pol)
            else:
                T.wait_wgmma(0)  # the update
                T.barrier_arrive(empty_k[i % KS])  # K read (SK, the update)
                # O^T += U^T P^T, under the next chunk's S~ and SK
                T.wgmma_gemm(ut_frag, pg_s[i % 2, :, :], o_frag, transpose_B=True, policy=pol)
        T.wait_wgmma(0)
        if n_iter > 0:
            release_chunk(o_frag, o_s, x_free, o_full, o_free, n_iter - 1, v0, emit_o, rows)
        store_end_state(s_frag, rows, K, vg, hv, seg, n, is_m, n_iter, is_last, warmup, store_ht, state_v_first, NSEG,
                        cp_out, ht)

    @T.prim_func
    def gdn_fwd_noprep(
        q: T.Tensor((num_tokens, H, K), dtype),
        k: T.Tensor((num_tokens, H, K), dtype),
        v: T.Tensor((num_tokens, HV, V), dtype),
        A: T.Tensor((num_tokens, HV, BT), dtype),  # not read (gdn_fwd_rs.py's signature)
        z: T.Tensor((num_tokens, HV, BT), dtype),  # not read
        g: T.Tensor((num_tokens, HV), accum),  # the raw log decays (gdn_fwd_rs.py's g_cumsum slot)
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
            k_s = T.alloc_shared((KS, BT, K), dtype)
            v_s = T.alloc_shared((2, BT, BV), dtype)
            g_s = T.alloc_shared((KS, BT), accum)  # the chunk's cumsum of g (formed by the producer warp)
            b_s = T.alloc_shared((KS, BT), accum)
            # the auxiliary warpgroup -> math, per ring stage
            ga_s = T.alloc_shared((2, BT, BT), dtype)  # G = Gamma * A0 * beta_col
            pg_s = T.alloc_shared((1 if p_in_math else 2, BT, BT), dtype)  # P = scale * Gamma * (Q K^T)
            # P of each math warpgroup (p_in_math), or with p_split P per stage, half of its columns from each
            pm_s = T.alloc_shared((2 if p_split else NMATH if p_in_math else 1, BT, BT), dtype)
            gam_s = T.alloc_shared((GS, BT), accum)  # gamma
            gam2_s = T.alloc_shared((GS, BT), accum)  # scale * gamma
            r_s = T.alloc_shared((GS, BT), accum)  # r = gamma_last / gamma
            # the auxiliary warpgroup's own: M = K K^T and the inverse (fp32, with the merges' scratch), beta
            m_s = T.alloc_shared((BT, BT + ROW_PAD), accum)
            inv_s = T.alloc_shared((BT, BT + ROW_PAD), accum)
            beta_s = T.alloc_shared((BT,), accum)
            # (the solve's merges write their scratch Y into the inverse's upper block [0:32, 32:64], where G's mask
            # product reads finite values: a scratch of its own, tried, left that block unwritten, and G was NaN
            # where the uninitialized block held NaN; it was no faster, 0.708 against 0.688 ms at (32, 32) 8192x4)
            Y0 = BT // 2
            # math -> storer
            o_s = T.alloc_shared((2, BT, BV), dtype)

            # per math warpgroup (its 64 V rows): S^T, S~^T (the A operand of SK and O1), SK, W^T (then U^T diag(r):
            # the update's A operand), U^T (fp32, then bf16: O2's A operand), O^T. Two warpgroups with their own
            # fragments (gdn_fwd_rs.py: TileLang 0.1.15 fences a 256-thread RS product's registers out of bounds);
            # the second set is unused at BV = 64
            SKW = BT // 2 if sk_halves else BT  # SK's columns at a time
            s0 = T.alloc_fragment((VH, K), accum)
            st0 = T.alloc_fragment((VH, K), dtype)
            sk0 = T.alloc_fragment((VH, SKW), accum)
            wt0 = T.alloc_fragment((VH, BT), dtype)
            u0 = T.alloc_fragment((VH, BT), accum)
            ut0 = T.alloc_fragment((VH, BT), dtype)
            o0 = T.alloc_fragment((VH, BT), accum)
            s1 = T.alloc_fragment((VH, K), accum)
            st1 = T.alloc_fragment((VH, K), dtype)
            sk1 = T.alloc_fragment((VH, SKW), accum)
            wt1 = T.alloc_fragment((VH, BT), dtype)
            u1 = T.alloc_fragment((VH, BT), accum)
            ut1 = T.alloc_fragment((VH, BT), dtype)
            o1 = T.alloc_fragment((VH, BT), accum)
            pm0 = T.alloc_fragment((BT, PW), accum)  # Q K^T, then P (p_in_math)
            pm1 = T.alloc_fragment((BT, PW), accum)
            # math_pair: both math warpgroups' fragments, 128 V rows (P: its 64 columns over both; unused otherwise)
            s_pr = T.alloc_fragment((BV, K), accum)
            st_pr = T.alloc_fragment((BV, K), dtype)
            sk_pr = T.alloc_fragment((BV, SKW), accum)
            wt_pr = T.alloc_fragment((BV, BT), dtype)
            u_pr = T.alloc_fragment((BV, BT), accum)
            ut_pr = T.alloc_fragment((BV, BT), dtype)
            o_pr = T.alloc_fragment((BV, BT), accum)
            pm_pr = T.alloc_fragment((BT, BT), accum)
            # the auxiliary warpgroup's: K K^T, then G; Q K^T, then P; the solve's (common/unit_lower_inverse.py)
            kk_frag = T.alloc_fragment((BT, BT), accum)
            p_frag = T.alloc_fragment((BT, BT), accum)  # Q K^T, then P
            acc32 = T.alloc_fragment((32, 32), accum)
            col = T.alloc_local((16,), accum)
            yv = T.alloc_local((4 if solve_shfl else 2,), accum)
            fa = T.alloc_local((8 if l2_shfl else 4,), accum)
            fb = T.alloc_local((2,), accum)
            fc = T.alloc_local((8 if l2_shfl else 4,), accum)
            fy = T.alloc_local((8 if l2_shfl else 4,), accum)  # (solve_shfl, l2_shfl) Y's B fragments in the merges
            sc = T.alloc_local((4 if gates_in_loader else 3,), accum)  # the producer warp's cumsum

            full_k = T.alloc_barrier([32] * KS)  # K, g's cumsum and beta loaded (producer warp 0)
            empty_k = T.alloc_barrier([PT] * KS)  # the math warpgroups and the auxiliary one read them
            full_v = T.alloc_barrier([32, 32])  # V loaded (producer warp 1)
            empty_v = T.alloc_barrier([PT - 128, PT - 128])  # the math warpgroups read it
            full_qz = T.alloc_barrier([32, 32])  # Q loaded (1 producer warp)
            # the math warpgroups (O1; with p_in_math Q K^T) and, without p_in_math, the auxiliary one (P) read it
            empty_qz = T.alloc_barrier([PT - 128, PT - 128] if p_in_math else [PT, PT])
            x_ready = T.alloc_barrier([128, 128])  # the auxiliary warpgroup wrote G, P and the gates of a stage
            x_free = T.alloc_barrier([PT - 128, PT - 128])  # the math warpgroups' products read them
            o_full = T.alloc_barrier([PT - 128, PT - 128])  # the math warpgroups wrote O to o_s[stage]
            o_free = T.alloc_barrier([32, 32])  # the storer warp stored o_s[stage]

            # V is read (V^T: column pieces) and O written (O^T) across rows: swizzled so that the rows of one
            # warp access fall in different banks; TMA writes and reads the same swizzle
            T.annotate_layout({v_s: make_swizzled_layout(v_s), o_s: make_swizzled_layout(o_s)})
            tx = T.get_thread_binding()

            if math_pair and tx < 256:
                # ---------------- the math warpgroups on one code path: S^T of the slice's 128 V rows
                T.set_max_nreg(NREG_MATH, 1)
                math_half(0, BV, T.GemmWarpPolicy.FullRow, BT, T.GemmWarpPolicy.FullCol, c0, s_pr, st_pr, sk_pr,
                          wt_pr, u_pr, ut_pr, o_pr, pm_pr, q_s, k_s, v_s, g_s, ga_s, pg_s, pm_s, gam_s, gam2_s, r_s,
                          o_s, scale, full_k, empty_k, full_v, empty_v, full_qz, empty_qz, x_ready, x_free, o_full,
                          o_free, h0, cp_h0, cp_out, ht, hv, seg, n, is_m, n_iter, flags, use_h0, state_v_first,
                          store_ht, emit_o, warmup, num_seqs)
            # (with math_pair the two branches below are constant False: a branch under tx >= 256 and tx < 128 made
            # TileLang 0.1.15's LegalizeNegativeIndex fail on the empty thread range)
            elif not math_pair and tx < 128:
                # ---------------- the math warpgroups: S^T of the slice's V rows [0, 64) (and [64, 128))
                T.set_max_nreg(NREG_MATH, 1)
                math_half(0, VH, T.GemmWarpPolicy.Square, PW, T.GemmWarpPolicy.Square, c0, s0, st0, sk0, wt0, u0, ut0,
                          o0, pm0, q_s, k_s, v_s, g_s, ga_s, pg_s, pm_s, gam_s, gam2_s, r_s, o_s, scale, full_k,
                          empty_k, full_v, empty_v, full_qz, empty_qz, x_ready, x_free, o_full, o_free, h0, cp_h0,
                          cp_out, ht, hv, seg, n, is_m, n_iter, flags, use_h0, state_v_first, store_ht, emit_o, warmup,
                          num_seqs)
            elif not math_pair and NMATH == 2 and tx < 256:
                T.set_max_nreg(NREG_MATH, 1)
                math_half(1, VH, T.GemmWarpPolicy.Square, PW, T.GemmWarpPolicy.Square, c0, s1, st1, sk1, wt1, u1, ut1,
                          o1, pm1, q_s, k_s, v_s, g_s, ga_s, pg_s, pm_s, gam_s, gam2_s, r_s, o_s, scale, full_k,
                          empty_k, full_v, empty_v, full_qz, empty_qz, x_ready, x_free, o_full, o_free, h0, cp_h0,
                          cp_out, ht, hv, seg, n, is_m, n_iter, flags, use_h0, state_v_first, store_ht, emit_o, warmup,
                          num_seqs)

            elif tx < PT:
                # ---------------- the auxiliary warpgroup: the gates, G and P, a stage ahead of the math
                T.set_max_nreg(NREG_AUX, 0)
                ax = tx - (PT - 128)
                if zero_once:
                    # everything above the 8x8 diagonal blocks (the merges' scratch block included), once
                    for r, c in T.Parallel(BT, BT):
                        inv_s[r, c] = 0.0
                    if g_direct:
                        for st, r, c in T.Parallel(2, BT, BT):
                            ga_s[st, r, c] = T.cast(0.0, dtype)
                elif l2_shfl:
                    # the merges' scratch, inv_s[0:32, 32:64], above the diagonal: with the level-2 merge's Y in
                    # registers nothing writes it (with solve_shfl nothing at all, else only the level-1 merge's
                    # columns), and G's pass masks it by a product (0 * x): zeros once, as the uninitialised shared
                    # memory gave NaN (33rd session, H100)
                    for r, c in T.Parallel(32, 32):
                        inv_s[r, Y0 + c] = 0.0
                if m_ahead and n_iter > 0:
                    # the first chunk's M (m_ahead: each chunk forms the next one's)
                    T.barrier_wait(full_k[0], 0)
                    T.wgmma_gemm(k_s[0, :, :], k_s[0, :, :], kk_frag, transpose_B=True, clear_accum=True)
                    T.wait_wgmma(0)
                    gate_m(kk_frag, g_s, 0)
                    T.copy(kk_frag, m_s[:, 0:BT])
                for i in T.serial(n_iter):
                    T.barrier_wait(full_k[i % KS], (i // KS) % 2)
                    T.barrier_wait(x_free[i % 2], (i // 2 + 1) % 2)  # chunk i - 2's products are done
                    # M = K K^T and Q K^T issued first, under the gates (Q K^T on every path, as the math warpgroups'
                    # products: without o its result is dropped)
                    if m_ahead:
                        # the next chunk's, T.min(i + 1, n_iter - 1) (the last chunk forms its own again, unread, so
                        # that no branch holds the product; the producer warp loads chunk i + 1 once chunk i - 2 freed
                        # its stage: no wait on this warpgroup's later work)
                        T.barrier_wait(full_k[T.min(i + 1, n_iter - 1) % KS], (T.min(i + 1, n_iter - 1) // KS) % 2)
                        T.wgmma_gemm(k_s[T.min(i + 1, n_iter - 1) % KS, :, :], k_s[T.min(i + 1, n_iter - 1) % KS, :, :],
                                     kk_frag, transpose_B=True, clear_accum=True)
                    else:
                        T.wgmma_gemm(k_s[i % KS, :, :], k_s[i % KS, :, :], kk_frag, transpose_B=True,
                                     clear_accum=True)
                    if not p_in_math:
                        T.barrier_wait(full_qz[i % 2], (i // 2) % 2)
                        T.wgmma_gemm(q_s[i % 2, :, :], k_s[i % KS, :, :], p_frag, transpose_B=True, clear_accum=True)
                    # beta for the solve, the per-row gates for the math warpgroups (g_s holds the chunk's cumsum,
                    # formed by the producer warp)
                    if not beta_ring and ax < BT:
                        beta_s[ax] = b_s[i % KS, ax]
                    if not gates_in_loader:
                        for r in T.Parallel(BT):
                            gam_s[i % 2, r] = exp_g(g_s[i % KS, r])
                            gam2_s[i % 2, r] = scale * exp_g(g_s[i % KS, r])
                            r_s[i % 2, r] = exp_g(g_s[i % KS, BT - 1] - g_s[i % KS, r])
                    # beta_s is read by all four warps in the solve: the warpgroup syncs on a named barrier of its own
                    # (TileLang 0.1.15 put none between a 64-thread branch's writes and such reads; 15: TileLang
                    # numbers its barriers from 1 up, one per thread range)
                    if not beta_ring:
                        T.sync_threads(AUX_BARRIER, 128)
                    if beta_ring:
                        bet = RingStage(b_s, i % KS)  # (the solve's beta: bet[row])
                    else:
                        bet = beta_s
                    if not m_ahead:
                        T.wait_wgmma(0)
                        # P = scale * Gamma * (Q K^T)
                        if emit_o and not p_in_math:
                            gate_p(p_frag, g_s, i % KS, scale, 0, BT)
                            T.copy(p_frag, pg_s[i % 2, :, :])
                        gate_m(kk_frag, g_s, i % KS)
                        T.copy(kk_frag, m_s[:, 0:BT])
                    # A_g into inv_s (K rows and beta past the sequence are 0)
                    if not zero_once:
                        for p, r, c in T.Parallel(2, 16, 16):
                            inv_s[32 * p + r, 32 * p + 16 + c] = 0.0
                    # (with g_direct each step also writes its blocks of G's stage)
                    diag8_blocks(m_s, inv_s, bet, col, yv, ax, inv_s, Y0, solve_shfl, solve_eye, not zero_once,
                                 ga_s if g_direct else None, i % 2)
                    if m_ahead:
                        # the next chunk's M in registers, under the merges
                        T.wait_wgmma(0)
                        gate_m(kk_frag, g_s, T.min(i + 1, n_iter - 1) % KS)
                    mma_level1_merge(m_s, inv_s, bet, fa, fb, fc, ax, inv_s, Y0, fy, solve_shfl,
                                     ga_s if g_direct else None, i % 2)
                    if l2_shfl:
                        mma_level2_merge(m_s, inv_s, bet, fa, fb, fc, ax, inv_s, Y0, fy, True,
                                         ga_s if g_direct else None, i % 2)
                    else:
                        tc_level2_merge(m_s, inv_s, bet, acc32, inv_s, Y0)
                    if m_ahead:
                        # the merges have read this chunk's M: the next one's in its place
                        T.copy(kk_frag, m_s[:, 0:BT])
                    if not g_direct:
                        # G = A_g * beta_col
                        for r, c in T.Parallel(BT, BT):
                            a_rc = inv_s[r, c]
                            b_c = bet[c]
                            if g_nomask:
                                kk_frag[r, c] = a_rc * b_c
                            else:
                                kk_frag[r, c] = a_rc * (b_c * T.cast(r >= c, accum))
                        T.copy(kk_frag, ga_s[i % 2, :, :])
                    T.fence_proxy_async()
                    T.barrier_arrive(x_ready[i % 2])
                    T.barrier_arrive(empty_k[i % KS])
                    if not p_in_math:
                        T.barrier_arrive(empty_qz[i % 2])

            else:
                # ---------------- the producer warps and the storer warp
                T.set_max_nreg(NREG_LOAD, 0)
                if tx < PT + 32:
                    for i in T.serial(n_iter):
                        T.barrier_wait(empty_k[i % KS], (i // KS + 1) % 2)
                        t0 = seq_start + (c_first + i) * BT
                        load_rows(k, k_s, i % KS, full_k, t0, seq_end, hq, 0, BT, K, dtype)
                        if gates_in_loader:
                            load_gate_cumsum_beta(g, beta, g_s, b_s, i % KS, t0, seq_end, hv, tx - PT, sc, LOG2E,
                                                  (gam_s, gam2_s, r_s, scale))
                        else:
                            load_gate_cumsum_beta(g, beta, g_s, b_s, i % KS, t0, seq_end, hv, tx - PT, sc,
                                                  LOG2E if log2_gates else 1.0)
                        T.barrier_arrive(full_k[i % KS])
                elif tx < PT + 64:
                    for i in T.serial(n_iter):
                        T.barrier_wait(empty_v[i % 2], (i // 2 + 1) % 2)
                        t0 = seq_start + (c_first + i) * BT
                        load_rows(v, v_s, i % 2, full_v, t0, v_end, hv, c0, BT, BV, dtype)
                        T.barrier_arrive(full_v[i % 2])
                elif tx < PT + 96:
                    for i in T.serial(n_iter):
                        T.barrier_wait(empty_qz[i % 2], (i // 2 + 1) % 2)
                        t0 = seq_start + (c_first + i) * BT
                        if emit_o:  # (O1 and P)
                            load_rows(q, q_s, i % 2, full_qz, t0, seq_end, hq, 0, BT, K, dtype)
                        T.barrier_arrive(full_qz[i % 2])
                else:
                    if emit_o:
                        store_o_walk(o, o_s, o_full, o_free, seq_start, seq_end, c_first, n_iter, hv, c0, BT, BV)
                        # the last sequence's last segment zeroes the padding tail [cu[N], T)
                        if is_last and n == num_seqs - 1:
                            zero_padding_tail(o, seq_end, num_tokens, hv, c0, BT, BV, dtype)

    return gdn_fwd_noprep
