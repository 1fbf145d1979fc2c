"""Context parallelism: the start state of every segment, from the warm-up pass's outputs.

One CTA per (sequence, v-head, BV-wide slice of V) walks the sequence's segments in order
(docs/gdn_chunk_derivation.md, "Context parallelism"):

    S_0 = h0 (or 0),   S_{j+1} = E_j + [plan_j < 0] M_j S_j

where E_j = cp_out[slot_j] is segment j's end state computed from zero (over its last
|plan_j| chunks) and M_j = cp_out[num_segs + slot_j] its transition matrix (written only for
the fallback segments, plan_j < 0). S_{j+1} is written to cp_h0[slot_j + 1]. The product
M_j S_j runs on tensor cores in three bf16 products (hi*hi + hi*lo + lo*hi of the bf16
split x = hi + lo), which keeps about 16 bits of the fp32 operands. M_{j+1} and E_{j+1} are fetched by
cp.async while step j computes (the walk is a chain: one round trip per step was most of a step).

With `reverse` != 0 it serves the backward (gdn_bwd_dh.py; seg_plan.py's reverse tables): it walks
the segments from last to first, with h0 = dht (the final-state gradient), E_j the gradient at
the end of segment j from segment j + 1's warm-up chunks and M_j the transposed transition
matrix of segment j + 1:

    G_last = dht (or 0),   G_j = E_j + [plan_j < 0] M_j G_{j+1}

and writes G_j, the gradient at the end of segment j, to cp_h0[slot_j].
"""

import tilelang.language as T

from common.bf16_split import split_slots, store_split
from common.grid_dependency import grid_dependency
from common.segments import load_state, walk_span
from common.walk_dims import correction_dims


def gdn_cp_correct_sm90(K: int = 128, V: int = 128, BT: int = 64, BV: int = 64, prefetch: bool = True,
                        threads: int = 128, tma: bool = False, split_acc: bool = False, pdl: bool = False,
                        skip_warm: bool = False, products: int = 3, split_m: bool = False, store_s: bool = True,
                        m_depth: int = 2):
    """prefetch: M_{j+1} and E_{j+1} by cp.async during step j (96 KB more shared memory: 192 KB in all, so
    off for the sm120 family, whose blocks get at most 99 KB; there each step loads its own M and E).
    threads: 128 (one warpgroup) or 256 (two, each with half of every product and elementwise pass; measured
    no faster on the H200, benchmarks/results/H200_walk.md). tma (with prefetch): M_{j+1} and E_{j+1} by TMA
    on an mbarrier each, issued by warp 0, instead of 16-byte cp.async copies by every thread. split_acc: the
    three products of a step into three accumulators, issued before one wait (else one accumulator: a chain of
    3 K / 16 dependent wgmmas per step); needs threads = 256 for the registers, and wgmma (the sm90 family:
    the other families lower this program without it). Neither the split of M nor the drains between the
    products shortened a step (benchmarks/results/H200_walk.md): the accumulator chain is what is left.
    pdl: programmatic dependent launch (common/grid_dependency.py).
    skip_warm: the splits and the products of a step only where its segment is on the fallback (plan < 0): the plan
    is the same for every thread of a CTA (one v-head), so the branch is uniform and its block-wide syncs are taken
    by all or none; M_{j+1}'s fetch stays outside it, so the barriers' phases do not depend on the plan.
    products: 3 (hi hi + hi lo + lo hi, about 16 bits of the fp32 operands); 2 (hi hi + hi lo: M rounded to bf16)
    and 1 (hi hi: both rounded, as FlashQLA's walk) only to measure what the products cost in a step
    (benchmarks/walk_bench.py; their error against float64 is bf16's, which the op does not accept).
    split_m (with prefetch and tma): M_j arrives already split, as the warm-up pass's transition rows wrote it with
    `warmup` = 2 (its bf16 high and low parts in the two halves of M's fp32 slot of cp_out, common/bf16_split.py
    split_slots), by TMA into one of two buffer pairs, so a step splits only S_j: no pass over M's 128 x 128 fp32
    elements in shared memory per step (the host launches the warm-up pass with 2 exactly when it takes this
    variant, csrc/ops/gdn_common.cpp). The same bits as the split here (the same rounding of the same values).
    store_s = False: S_{j+1} not written (a diagnostic for benchmarks/walk_bench.py: what the store costs a step).
    m_depth (split_m): buffer pairs for M's parts; step jj fetches step jj + m_depth - 1's M, so with 3 a transition
    matrix has two steps to land instead of one (224 KB of shared memory at BV = 32). Measured no faster (46th session,
    H200: 2.42 against 2.43 us per step in walk_bench.py, the backward 1.000x and the forward 1.001x the default's
    time): the split walk's step does not wait on M's loads; the wheel builds 2."""
    assert products in (1, 2, 3) and (products == 3 or not split_acc)
    assert not split_m or (prefetch and tma and products == 3 and not split_acc), "split_m: TMA prefetch, 3 products"
    assert m_depth == 2 or (split_m and m_depth == 3), "m_depth 3: the split walk's buffers"
    assert not split_acc or threads == 256, "three accumulators of K x BV fp32 need two warpgroups' registers"
    NV = V // BV
    HV, N1, NS, NSEG, NGRID = correction_dims()  # common/walk_dims.py
    accum = "float32"
    half = "bfloat16"

    @T.macro
    def fetch(src, dst, bar, tx):
        """dst <- src, landing asynchronously: by TMA on bar, issued and arrived by warp 0 (tma), else by
        cp.async from every thread (waited with ptx_wait_group)."""
        if tma:
            if tx < 32:
                T.tma_copy(src, dst, barrier=bar[0], leader_scope_threads=32)
                T.barrier_arrive(bar[0])
        else:
            T.async_copy(src, dst)

    @T.macro
    def proxy_fence():
        """Before the block barrier after which warp 0 refills a buffer by TMA (tma): every thread's reads of it ordered
        before the TMA's writes. The TMA writes through the async proxy, which a barrier does not order against loads
        still in flight (walk_bench.py --detail, 41st session: without it the last loads of warp 0, the warp that issues
        the copy, now and then read the next step's E, in the 32-wide slice, one product and skip_warm variants)."""
        if tma:
            T.fence_proxy_async()

    @T.macro
    def split_operands(cp_out, slot, hv, m32_s, mh_s, ml_s, sh_s, sl_s, s_frag):
        """M_j (from the prefetch buffer, or from cp_out's row of the slot without prefetch) and S_j split into bf16
        high and low parts in shared memory."""
        if products < 3:  # M's high part only
            if prefetch:
                for a, c in T.Parallel(K, K):
                    mh_s[a, c] = T.cast(m32_s[a, c], half)
            else:
                for a, c in T.Parallel(K, K):
                    mh_s[a, c] = T.cast(cp_out[NSEG + slot, hv, a, c], half)
        elif prefetch:
            for a, c in T.Parallel(K, K):
                store_split(mh_s, ml_s, a, c, m32_s[a, c])
        else:
            for a, c in T.Parallel(K, K):
                store_split(mh_s, ml_s, a, c, cp_out[NSEG + slot, hv, a, c])
        for a, b in T.Parallel(K, BV):
            sh_s[a, b] = T.cast(s_frag[a, b], half)
        # the low part from registers (sh_s holds exactly the high part): a loop that read sh_s and wrote
        # sl_s got a block barrier per iteration from TileLang's sync planner
        if products >= 2:
            for a, b in T.Parallel(K, BV):
                sl_s[a, b] = T.cast(s_frag[a, b] - T.cast(T.cast(s_frag[a, b], half), accum), half)

    @T.macro
    def fetch_split_m(cp_out, row, hv, buf, mh2_s, ml2_s, bar_mh, bar_ml, tx):
        """M's high and low parts from cp_out's row `row` (split_slots' view) into buffer pair buf, by TMA issued by
        warp 0, each on its own mbarrier of the pair (split_m)."""
        if tx < 32:
            T.tma_copy(split_slots(cp_out)[row, hv, 0, 0:K, 0:K], mh2_s[buf, :, :],
                       barrier=bar_mh[buf], leader_scope_threads=32)
            T.barrier_arrive(bar_mh[buf])
            T.tma_copy(split_slots(cp_out)[row, hv, 1, 0:K, 0:K], ml2_s[buf, :, :],
                       barrier=bar_ml[buf], leader_scope_threads=32)
            T.barrier_arrive(bar_ml[buf])

    @T.macro
    def split_s(sh_s, sl_s, s_frag):
        """S_j split into bf16 high and low parts in shared memory (split_m: M_j came split)."""
        for a, b in T.Parallel(K, BV):
            sh_s[a, b] = T.cast(s_frag[a, b], half)
        for a, b in T.Parallel(K, BV):
            sl_s[a, b] = T.cast(s_frag[a, b] - T.cast(T.cast(s_frag[a, b], half), accum), half)

    @T.macro
    def fetch_next_m(m_next, jj, num_steps, m32_s, bar_m, tx):
        """Once every thread has read m32_s (split into its bf16 parts), M_{j+1} (the region m_next) fetched into it
        (prefetch)."""
        if prefetch:
            proxy_fence()
            T.sync_threads()  # m32_s is read: the next M may land there
            if jj + 1 < num_steps:
                fetch(m_next, m32_s, bar_m, tx)

    @T.macro
    def multiply(mh_s, ml_s, sh_s, sl_s, ms_frag, ms2_frag, ms3_frag):
        """ms_frag <- M_j S_j as hi hi + hi lo + lo hi (the first `products` of them)."""
        if split_acc:  # three independent accumulator chains of K / 16 wgmmas, issued together
            T.fence_proxy_async()
            T.sync_threads()
            T.wgmma_gemm(mh_s, sh_s, ms_frag, clear_accum=True)
            T.wgmma_gemm(mh_s, sl_s, ms2_frag, clear_accum=True)
            T.wgmma_gemm(ml_s, sh_s, ms3_frag, clear_accum=True)
            T.wait_wgmma(0)
            T.warpgroup_fence_operand(ms_frag, num_regs=K * BV // threads)
            T.warpgroup_fence_operand(ms2_frag, num_regs=K * BV // threads)
            T.warpgroup_fence_operand(ms3_frag, num_regs=K * BV // threads)
            for a, b in T.Parallel(K, BV):
                ms_frag[a, b] = ms_frag[a, b] + (ms2_frag[a, b] + ms3_frag[a, b])
        else:
            T.gemm(mh_s, sh_s, ms_frag, clear_accum=True)
            if products >= 2:
                T.gemm(mh_s, sl_s, ms_frag)
            if products == 3:
                T.gemm(ml_s, sh_s, ms_frag)

    @T.prim_func
    def gdn_cp_correct(
        cu_seqlens: T.Tensor((N1,), "int32"),
        h0: T.Tensor((NS, HV, K, V), accum),  # [N, HV, K, V], or [N, HV, V, K] if state_v_first
        cp_plan: T.Tensor((NSEG, HV), "int32"),
        cp_out: T.Tensor((NGRID, HV, K, V), accum),
        cp_h0: T.Tensor((NSEG, HV, K, V), accum),
        num_tokens: T.int32,
        seg_tokens: T.int32,
        use_h0: T.int32,
        state_v_first: T.int32,
        reverse: T.int32,  # 1: the backward's end-of-segment gradients, last segment first
    ):
        # a 3-D grid: the head and the V slice are block indices, never divisions in 64-bit offsets
        with T.Kernel(N1 - 1, HV, NV, threads=threads) as (n, hv, vb):
            grid_dependency(pdl)
            v0 = vb * BV
            tx = T.get_thread_binding()
            first = T.alloc_var("int32", init=0)
            last_j = T.alloc_var("int32", init=0)
            num_segs = walk_span(cu_seqlens, n, num_tokens, seg_tokens, BT, first, last_j)

            if split_m:  # M_j's high and low parts, m_depth buffer pairs (step jj uses pair jj % m_depth)
                mh_s = T.alloc_shared((m_depth, K, K), half)
                ml_s = T.alloc_shared((m_depth, K, K), half)
            else:
                mh_s = T.alloc_shared((K, K), half)
                ml_s = T.alloc_shared((K, K), half)
            sh_s = T.alloc_shared((K, BV), half)
            sl_s = T.alloc_shared((K, BV), half)
            s_frag = T.alloc_fragment((K, BV), accum)
            ms_frag = T.alloc_fragment((K, BV), accum)
            ms2_frag = ms3_frag = m32_s = bar_m = None  # allocated below where the options use them
            if split_acc:
                ms2_frag = T.alloc_fragment((K, BV), accum)
                ms3_frag = T.alloc_fragment((K, BV), accum)
            num_steps = T.max(num_segs - 1, 0)
            if prefetch:
                # step 0's M and E by cp.async; each step issues the next step's M once its split has read m32_s
                # and the next E once its own E is read, so the walk's one round trip to memory per step (64 KB
                # of M and 32 KB of E) overlaps the step's products instead of preceding them
                if not split_m:
                    m32_s = T.alloc_shared((K, K), accum)  # the next step's M, landing by cp.async (or TMA)
                e_s = T.alloc_shared((K, BV), accum)  # the next step's E, landing by cp.async (or TMA)
                # warp 0 arrives on these and the TMA's bytes complete the phase (tma); unused with cp.async
                bar_m = T.alloc_barrier(32) if tma and not split_m else None
                bar_e = T.alloc_barrier(32) if tma else None
                if split_m:  # one barrier per buffer and half
                    bar_mh = T.alloc_barrier([32] * m_depth)
                    bar_ml = T.alloc_barrier([32] * m_depth)
                if num_steps > 0:
                    j0 = T.if_then_else(reverse != 0, last_j, 0)
                    if split_m:
                        fetch_split_m(cp_out, NSEG + first + j0, hv, 0, mh_s, ml_s, bar_mh, bar_ml, tx)
                        if m_depth == 3 and num_steps > 1:
                            fetch_split_m(cp_out, NSEG + first + T.if_then_else(reverse != 0, last_j - 1, 1), hv, 1,
                                          mh_s, ml_s, bar_mh, bar_ml, tx)
                    else:
                        fetch(cp_out[NSEG + first + j0, hv, 0:K, 0:K], m32_s, bar_m, tx)
                    fetch(cp_out[first + j0, hv, 0:K, v0:v0 + BV], e_s, bar_e, tx)

            if use_h0 != 0:
                load_state(s_frag, h0, n, hv, v0, state_v_first, K, BV)
            else:
                T.clear(s_frag)
            for jj in T.serial(num_steps):
                j = T.if_then_else(reverse != 0, last_j - jj, jj)
                slot = first + j
                plan = cp_plan[slot, hv]
                # M_j S_j, computed for every segment unless skip_warm (a branch on the plan, uniform in the
                # CTA, around the splits and products) and used for the fallback ones; M_j is only written for
                # those, so the selection below must not multiply (one read of M per element: hi and lo from the
                # same register)
                if prefetch and not split_m:
                    if tma:
                        T.barrier_wait(bar_m[0], jj % 2)
                    else:
                        T.ptx_wait_group(0)  # this thread's copies of M_j and E_j
                        T.sync_threads()  # everyone's
                m_next = cp_out[NSEG + first + j + 1 - 2 * reverse, hv, 0:K, 0:K]  # M_{j+1}, for the prefetch
                if split_m:
                    buf = jj % m_depth
                    T.barrier_wait(bar_mh[buf], (jj // m_depth) % 2)
                    T.barrier_wait(bar_ml[buf], (jj // m_depth) % 2)
                    if skip_warm:
                        if plan < 0:
                            split_s(sh_s, sl_s, s_frag)
                    else:
                        split_s(sh_s, sl_s, s_frag)
                    proxy_fence()
                    # S's halves are written; pair (jj - 1) % m_depth was last read by step jj - 1's products: step
                    # jj + m_depth - 1's M may land there
                    T.sync_threads()
                    if jj + m_depth - 1 < num_steps:
                        # (1 - buf with two pairs: the generated code as before m_depth)
                        fetch_split_m(cp_out, NSEG + first + j + (m_depth - 1) * (1 - 2 * reverse), hv,
                                      1 - buf if m_depth == 2 else (jj + m_depth - 1) % m_depth, mh_s, ml_s, bar_mh, bar_ml, tx)
                    if skip_warm:
                        if plan < 0:
                            multiply(mh_s[buf, :, :], ml_s[buf, :, :], sh_s, sl_s, ms_frag, ms2_frag, ms3_frag)
                    else:
                        multiply(mh_s[buf, :, :], ml_s[buf, :, :], sh_s, sl_s, ms_frag, ms2_frag, ms3_frag)
                elif skip_warm:
                    if plan < 0:
                        split_operands(cp_out, slot, hv, m32_s, mh_s, ml_s, sh_s, sl_s, s_frag)
                        multiply(mh_s, ml_s, sh_s, sl_s, ms_frag, ms2_frag, ms3_frag)
                    fetch_next_m(m_next, jj, num_steps, m32_s, bar_m, tx)
                else:
                    split_operands(cp_out, slot, hv, m32_s, mh_s, ml_s, sh_s, sl_s, s_frag)
                    fetch_next_m(m_next, jj, num_steps, m32_s, bar_m, tx)
                    multiply(mh_s, ml_s, sh_s, sl_s, ms_frag, ms2_frag, ms3_frag)
                if prefetch:
                    if tma:
                        T.barrier_wait(bar_e[0], jj % 2)
                    T.copy(e_s, s_frag)
                    proxy_fence()
                    T.sync_threads()  # e_s is read: the next E may land there
                    if jj + 1 < num_steps:
                        fetch(cp_out[first + j + 1 - 2 * reverse, hv, 0:K, v0:v0 + BV], e_s, bar_e, tx)
                else:
                    T.copy(cp_out[slot, hv, 0:K, v0:v0 + BV], s_frag)
                for a, b in T.Parallel(K, BV):
                    s_frag[a, b] += T.if_then_else(plan < 0, ms_frag[a, b], 0.0)
                if store_s:
                    T.copy(s_frag, cp_h0[slot + 1 - reverse, hv, 0:K, v0:v0 + BV])

    return gdn_cp_correct
