"""Context parallelism's log-depth scan (sm90/cp_scan.py) with the maps' A kept split and every operand loaded at once.

The rounds, the walk order, the zero flags and the start state's fold are cp_scan.py's (read its docstring first);
what differs is how a round moves its data. cp_scan.py's CTA reads its operands one after another, each by plain loads
from its 128 threads, and splits the 128 x 128 fp32 A_p into bf16 halves itself: on an H100 a round took 14-15 us
(39th session). Here

- every A lives split, as the split walk's transitions do (common/bf16_split.py split_slots: a slot's bf16 high part
  in the first half of its fp32 bytes, the low part in the second): the warm-up pass writes the first round's A so
  (the host launches it with warmup = 2 when it takes this variant), and each round writes its products A_p A_q so.
  A CTA never splits a K x K matrix;
- warp 0 issues A_p's two halves, the partner's B and the partner's A columns by TMA at the start, each on its own
  mbarrier, so all of a round's bytes are in flight together; the threads read their own B_p meanwhile.

The same rounding of the same values as cp_scan.py (bf16 split of the same fp32 numbers, the three products in the
same order), so the same bits (tests/test_cp_scan_split_gpu.py). Measured (H100, 44th session,
benchmarks/results/s44/README.md): 12 us per round, against 2.25 us per step of the split walk, so the loads were not
what a round waited on; off with the scan (FLASHQLA_CP_SCAN).
"""

import tilelang.language as T

from common.bf16_split import split_slots, split_state_columns, store_split, store_split_slot
from common.grid_dependency import grid_dependency
from common.seq_index import seq_bound
from common.walk_dims import correction_dims


def gdn_cp_scan_split_sm90(K: int = 128, V: int = 128, BT: int = 64, BV: int = 64, threads: int = 128,
                           pdl: bool = False):
    """cp_scan.py's kernel (the same launcher signature) on split A: 160 KB of shared memory at BV = 64."""
    assert K == V, "the maps' A and the states share one buffer layout"
    NV = V // BV
    HV, N1, NS, NSEG, NGRID = correction_dims()  # common/walk_dims.py
    accum = "float32"
    half = "bfloat16"

    @T.macro
    def issue(src_region, dst_s, bar, i, tx):
        """dst_s <- src_region by TMA on bar[i], issued and arrived by warp 0."""
        if tx < 32:
            T.tma_copy(src_region, dst_s, barrier=bar[i], leader_scope_threads=32)
            T.barrier_arrive(bar[i])

    @T.macro
    def issue_full_a(buf, row, hv, mh_s, ml_s, bar_a, tx):
        """A's two halves of row `row` of buf (all K columns: the left operand) into mh_s, ml_s."""
        issue(split_slots(buf)[row, hv, 0, 0:K, 0:K], mh_s, bar_a, 0, tx)
        issue(split_slots(buf)[row, hv, 1, 0:K, 0:K], ml_s, bar_a, 1, tx)

    @T.macro
    def wait_full_a(bar_a, phase):
        T.barrier_wait(bar_a[0], phase)
        T.barrier_wait(bar_a[1], phase)

    @T.macro
    def mul_add(mh_s, ml_s, xh_s, xl_s, acc):
        """acc += M X (fp32 operands by their three bf16 products; the threads' writes of X ordered before the
        tensor cores' reads)."""
        T.fence_proxy_async()
        T.sync_threads()
        T.gemm(mh_s, xh_s, acc)
        T.gemm(mh_s, xl_s, acc)
        T.gemm(ml_s, xh_s, acc)

    @T.prim_func
    def gdn_cp_scan(
        cu_seqlens: T.Tensor((N1,), "int32"),
        start: T.Tensor((NS, HV, K, V), accum),  # h0 (or dht in reverse): [N, HV, K, V], or [N, HV, V, K]
        seg_seq: T.Tensor((NSEG,), "int32"),
        cp_plan: T.Tensor((NSEG, HV), "int32"),
        src: T.Tensor((NGRID, HV, K, V), accum),  # rows [0, NSEG) B (fp32), [NSEG, 2 NSEG) A (split_slots)
        zsrc: T.Tensor((NSEG, HV), "int32"),  # 1: the map's A is zero (unread in the first round)
        dst: T.Tensor((NGRID, HV, K, V), accum),
        zdst: T.Tensor((NSEG, HV), "int32"),
        cp_h0: T.Tensor((NSEG, HV, K, V), accum),
        num_tokens: T.int32,
        seg_tokens: T.int32,
        use_h0: T.int32,
        state_v_first: T.int32,
        reverse: T.int32,
        offset: T.int32,  # this round's o
        first_round: T.int32,
    ):
        with T.Kernel(NSEG, HV, NV, threads=threads) as (s, hv, vb):
            grid_dependency(pdl)
            tx = T.get_thread_binding()
            v0 = vb * BV
            num_seqs = N1 - 1
            n = T.alloc_var("int32", init=0)
            n = T.min(seg_seq[s], num_seqs)  # num_seqs: a padding slot
            seq_start = seq_bound(cu_seqlens, n, num_tokens)
            seq_end = T.max(seq_bound(cu_seqlens, T.min(n + 1, num_seqs), num_tokens), seq_start)
            num_segs = T.alloc_var("int32", init=0)
            num_segs = T.ceildiv(T.ceildiv(seq_end - seq_start, BT), seg_tokens // BT)
            j = T.alloc_var("int32", init=0)  # this slot's segment in its sequence
            j = s - (seq_start // seg_tokens + n)
            p = T.alloc_var("int32", init=0)  # its walk position
            p = T.if_then_else(reverse != 0, num_segs - 2 - j, j)
            q_slot = T.alloc_var("int32", init=0)  # the partner's slot
            q_slot = T.if_then_else(reverse != 0, s + offset, s - offset)

            mh_s = T.alloc_shared((K, K), half)  # A_p's halves (or the partner's A for the start state's fold)
            ml_s = T.alloc_shared((K, K), half)
            ah_s = T.alloc_shared((K, BV), half)  # the partner's A, this CTA's columns, halves
            al_s = T.alloc_shared((K, BV), half)
            bq_s = T.alloc_shared((K, BV), accum)  # the partner's B (or its state, from cp_h0)
            xh_s = T.alloc_shared((K, BV), half)  # the right operand's halves: the partner's B or a start state
            xl_s = T.alloc_shared((K, BV), half)
            b_frag = T.alloc_fragment((K, BV), accum)  # B_p, then the new B
            x_frag = T.alloc_fragment((K, BV), accum)  # the partner's folded B, or the new A's columns
            bar_a = T.alloc_barrier([32, 32])  # mh_s, ml_s
            bar_q = T.alloc_barrier([32, 32, 32])  # bq_s, ah_s, al_s
            # uniform over the CTA, set once (TileLang may split a branch chain into separate tests of a condition)
            zero_p = T.alloc_var("int32", init=0)  # A_p is zero as read
            zero_q = T.alloc_var("int32", init=0)  # the partner's A is zero as read (first round: from the plan)
            fold_q = T.alloc_var("int32", init=0)  # first round, the partner is walk position 0 with a fallback map
            partner = T.alloc_var("int32", init=0)  # this map takes a partner this round
            zero_new = T.alloc_var("int32", init=0)

            if n < num_seqs and j <= num_segs - 2:
                if first_round != 0:
                    zero_p = T.if_then_else(cp_plan[s, hv] < 0, 0, 1)
                else:
                    zero_p = zsrc[s, hv]
                if first_round == 0 and zero_p != 0:
                    # complete in an earlier round: only the flag carries over to the other row
                    if vb == 0:
                        zdst[s, hv] = 1
                else:
                    zero_new = zero_p
                    partner = T.if_then_else(zero_p == 0 and p >= offset, 1, 0)
                    if partner != 0:
                        if first_round != 0:
                            zero_q = T.if_then_else(cp_plan[q_slot, hv] < 0, 0, 1)
                            fold_q = T.if_then_else(p == offset and use_h0 != 0 and zero_q == 0, 1, 0)
                            if p == offset:
                                zero_q = 1  # walk position 0's map is complete once the start state is folded in
                        else:
                            zero_q = zsrc[q_slot, hv]
                        # every operand at once: the partner's B (its state if complete before this round), its A's
                        # columns where they are not zero, and A_p unless the fold needs mh_s first
                        if first_round == 0 and zero_q != 0:
                            issue(cp_h0[q_slot + 1 - reverse, hv, 0:K, v0:v0 + BV], bq_s, bar_q, 0, tx)
                        else:
                            issue(src[q_slot, hv, 0:K, v0:v0 + BV], bq_s, bar_q, 0, tx)
                        if zero_q == 0:
                            issue(split_slots(src)[NSEG + q_slot, hv, 0, 0:K, v0:v0 + BV], ah_s, bar_q, 1, tx)
                            issue(split_slots(src)[NSEG + q_slot, hv, 1, 0:K, v0:v0 + BV], al_s, bar_q, 2, tx)
                        if fold_q != 0:
                            issue_full_a(src, NSEG + q_slot, hv, mh_s, ml_s, bar_a, tx)
                        else:
                            issue_full_a(src, NSEG + s, hv, mh_s, ml_s, bar_a, tx)
                    elif first_round != 0 and p == 0 and use_h0 != 0 and zero_p == 0:
                        issue_full_a(src, NSEG + s, hv, mh_s, ml_s, bar_a, tx)  # for the fold of the start state
                    T.copy(src[s, hv, 0:K, v0:v0 + BV], b_frag)

                    if first_round != 0 and p == 0:
                        # the start state folded in: B_0 = E_0 + M~_0 S_start, A_0 = 0
                        if use_h0 != 0 and zero_p == 0:
                            split_state_columns(start, n, hv, v0, state_v_first, xh_s, xl_s, K, BV)
                            wait_full_a(bar_a, 0)
                            mul_add(mh_s, ml_s, xh_s, xl_s, b_frag)
                        zero_new = 1
                    if partner != 0:
                        T.barrier_wait(bar_q[0], 0)
                        if fold_q != 0:
                            # the partner is walk position 0: its B folded with the start state (its A from mh_s),
                            # then A_p into mh_s once the products have read it
                            split_state_columns(start, n, hv, v0, state_v_first, xh_s, xl_s, K, BV)
                            T.copy(bq_s, x_frag)
                            wait_full_a(bar_a, 0)
                            mul_add(mh_s, ml_s, xh_s, xl_s, x_frag)
                            T.fence_proxy_async()
                            T.sync_threads()  # mh_s, ml_s and xh_s, xl_s read: A_p and the split may land
                            issue_full_a(src, NSEG + s, hv, mh_s, ml_s, bar_a, tx)
                            for a, b in T.Parallel(K, BV):
                                store_split(xh_s, xl_s, a, b, x_frag[a, b])
                            wait_full_a(bar_a, 1)
                        else:
                            for a, b in T.Parallel(K, BV):
                                store_split(xh_s, xl_s, a, b, bq_s[a, b])
                            wait_full_a(bar_a, 0)
                        # B_p += A_p B_q
                        mul_add(mh_s, ml_s, xh_s, xl_s, b_frag)
                        if zero_q != 0:
                            zero_new = 1
                        else:
                            # A_p <- A_p A_q (this CTA's columns), stored split for the next round
                            T.barrier_wait(bar_q[1], 0)
                            T.barrier_wait(bar_q[2], 0)
                            T.clear(x_frag)
                            T.gemm(mh_s, ah_s, x_frag)
                            T.gemm(mh_s, al_s, x_frag)
                            T.gemm(ml_s, ah_s, x_frag)
                            for a, b in T.Parallel(K, BV):
                                store_split_slot(dst, NSEG + s, hv, a, v0 + b, x_frag[a, b])
                    if zero_p == 0 and p < offset and not (first_round != 0 and p == 0):
                        # no partner this round: the map's A passes through, halves as they are
                        for h, a, b in T.Parallel(2, K, BV):
                            split_slots(dst)[NSEG + s, hv, h, a, v0 + b] = split_slots(src)[NSEG + s, hv, h, a, v0 + b]
                    # complete this round: B is the state, written once; an incomplete map's B goes on
                    if zero_new != 0:
                        T.copy(b_frag, cp_h0[s + 1 - reverse, hv, 0:K, v0:v0 + BV])
                    else:
                        T.copy(b_frag, dst[s, hv, 0:K, v0:v0 + BV])
                    if vb == 0:
                        zdst[s, hv] = zero_new

    return gdn_cp_scan
