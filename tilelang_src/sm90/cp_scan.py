"""Context parallelism: the start state of every segment by a log-depth scan instead of cp_correct's walk.

cp_correct.py walks a sequence's segments one after another, S_{j+1} = E_j + M~_j S_j (M~_j = M_j for the
exact-fallback segments, plan_j < 0, else 0): a chain of one 4.2-4.4 us step per segment, the largest kernel
of a training step at few heads and long sequences (H100, (2, 4) 1x32768: 0.259 of 0.933 ms, three walks;
benchmarks/results/s38). Each step is an affine map f_j(S) = B_j + A_j S with (A_j, B_j) = (M~_j, E_j),
and maps compose associatively:

    f_p o f_q = (A_p A_q, B_p + A_p B_q)

so the prefix compositions take ceil(log2(steps)) rounds of a Hillis-Steele scan (docs/gdn_chunk_derivation.md,
"The correction as a scan"). One launch per round, offset o = 1, 2, 4, ...: the element at walk position
p >= o takes its partner p - o's map from the round before,

    (A_p, B_p) <- (A_p A_{p-o}, B_p + A_p B_{p-o}),

reading `src` and writing `dst` (the host alternates two buffers). The start state (h0, or dht in reverse) is
folded into walk position 0 in the first round, B_0 <- E_0 + M~_0 S_start and A_0 <- 0, so a map whose A is
zero is complete: B is the state, written to cp_h0 in the round where A becomes zero (a decaying segment's
map is complete from the start) and read from there by partners in later rounds; a complete map's CTAs then
only carry its zero flag to the other row (neither its B nor its A is copied on). After the last round every
A is zero.

Walk order: forward p = j (S_{j+1} to cp_h0[slot_j + 1]); with `reverse` != 0 (the backward's gradients,
G_j = E_j + M~_j G_{j+1}) p = num_segs - 2 - j and G_j goes to cp_h0[slot_j]: the walk's outputs exactly.
One CTA per (segment slot, v-head, BV-wide slice of V); a map's A is [K, K] (a CTA reads all of it and writes
its BV columns of the product), B is [K, V] as the states. Zero flags [NSEG, HV] (int32) alternate with the
buffers; the first round reads the plan's sign instead. Products as the walk's: three bf16 products of the
hi / lo split of the fp32 operands. M~_j is read only where the plan says it was written.

Off by default (FLASHQLA_CP_SCAN): on an H100 a round took 14-15 us, three and a half walk steps, so the scan paid
only where a sequence had about 16 maps or more (benchmarks/results/s39/README.md).
"""

import tilelang.language as T

from common.bf16_split import split_state_columns, store_split
from common.grid_dependency import grid_dependency
from common.seq_index import seq_bound
from common.walk_dims import correction_dims


def gdn_cp_scan_sm90(K: int = 128, V: int = 128, BT: int = 64, BV: int = 64, threads: int = 128, pdl: bool = False):
    """K x K maps, K x V states, BV-wide column slices per CTA (K == V: maps and states share the buffers'
    layout, E at rows [0, NSEG) and A at rows [NSEG, 2 NSEG) as cp_out's E and M)."""
    assert K == V, "the maps' A and the states share one buffer layout"
    NV = V // BV
    HV, N1, NS, NSEG, NGRID = correction_dims()  # common/walk_dims.py
    accum = "float32"
    half = "bfloat16"

    @T.macro
    def split_full(src, row, hv, hi_s, lo_s):
        """hi_s, lo_s <- the bf16 split of src[row, hv] ([K, K] fp32)."""
        for a, c in T.Parallel(K, K):
            store_split(hi_s, lo_s, a, c, src[row, hv, a, c])

    @T.macro
    def split_frag(frag, hi_s, lo_s):
        """hi_s, lo_s <- the bf16 split of a [K, BV] fp32 fragment."""
        for a, b in T.Parallel(K, BV):
            store_split(hi_s, lo_s, a, b, frag[a, b])

    @T.macro
    def mul_add(mh_s, ml_s, xh_s, xl_s, acc):
        """acc += M X (fp32 operands by their three bf16 products)."""
        T.fence_proxy_async()
        T.sync_threads()
        T.gemm(mh_s, xh_s, acc)
        T.gemm(mh_s, xl_s, acc)
        T.gemm(ml_s, xh_s, acc)
        T.sync_threads()  # the split buffers may be refilled

    @T.prim_func
    def gdn_cp_scan(
        cu_seqlens: T.Tensor((N1,), "int32"),
        start: T.Tensor((NS, HV, K, V), accum),  # h0 (or dht in reverse): [N, HV, K, V], or [N, HV, V, K]
        seg_seq: T.Tensor((NSEG,), "int32"),
        cp_plan: T.Tensor((NSEG, HV), "int32"),
        src: T.Tensor((NGRID, HV, K, V), accum),  # rows [0, NSEG) B, [NSEG, 2 NSEG) A (the first round: cp_out)
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
            p = T.alloc_var("int32", init=0)  # its walk position (num_segs - 1 maps: the last segment has none)
            p = T.if_then_else(reverse != 0, num_segs - 2 - j, j)
            q_slot = T.alloc_var("int32", init=0)  # the partner's slot
            q_slot = T.if_then_else(reverse != 0, s + offset, s - offset)

            mh_s = T.alloc_shared((K, K), half)
            ml_s = T.alloc_shared((K, K), half)
            xh_s = T.alloc_shared((K, BV), half)
            xl_s = T.alloc_shared((K, BV), half)
            b_frag = T.alloc_fragment((K, BV), accum)  # B_p, then the new B
            x_frag = T.alloc_fragment((K, BV), accum)  # the partner's B, then its A's columns, then the new A's
            # the map's zero flag as read (never changed below: TileLang may split a branch chain into separate
            # tests of the same condition) and as written
            zero_p = T.alloc_var("int32", init=0)
            zero_q = T.alloc_var("int32", init=0)
            zero_new = T.alloc_var("int32", init=0)

            if n < num_seqs and j <= num_segs - 2:
                if first_round != 0:
                    zero_p = T.if_then_else(cp_plan[s, hv] < 0, 0, 1)
                else:
                    zero_p = zsrc[s, hv]
                if first_round == 0 and zero_p != 0:
                    # complete in an earlier round: the state is in cp_h0 (where partners read it), only the flag
                    # carries over to the other row
                    if vb == 0:
                        zdst[s, hv] = 1
                else:
                    zero_new = zero_p
                    T.copy(src[s, hv, 0:K, v0:v0 + BV], b_frag)
                    if first_round != 0 and p == 0:
                        # the start state folded in: B_0 = E_0 + M~_0 S_start, A_0 = 0
                        if use_h0 != 0 and zero_p == 0:
                            split_full(src, NSEG + s, hv, mh_s, ml_s)
                            split_state_columns(start, n, hv, v0, state_v_first, xh_s, xl_s, K, BV)
                            mul_add(mh_s, ml_s, xh_s, xl_s, b_frag)
                        zero_new = 1
                    if zero_p == 0 and p >= offset:
                        # the partner's map: its B (folded with the start state when it is walk position 0 of the
                        # first round, whose A is then zero; its state from cp_h0 when it was complete before this
                        # round) and whether its A is zero
                        if first_round != 0:
                            T.copy(src[q_slot, hv, 0:K, v0:v0 + BV], x_frag)
                            zero_q = T.if_then_else(cp_plan[q_slot, hv] < 0, 0, 1)
                            if p == offset and use_h0 != 0 and zero_q == 0:  # the partner is walk position 0
                                split_full(src, NSEG + q_slot, hv, mh_s, ml_s)
                                split_state_columns(start, n, hv, v0, state_v_first, xh_s, xl_s, K, BV)
                                mul_add(mh_s, ml_s, xh_s, xl_s, x_frag)
                            if p == offset:
                                zero_q = 1
                        else:
                            zero_q = zsrc[q_slot, hv]
                            if zero_q != 0:
                                T.copy(cp_h0[q_slot + 1 - reverse, hv, 0:K, v0:v0 + BV], x_frag)
                            else:
                                T.copy(src[q_slot, hv, 0:K, v0:v0 + BV], x_frag)
                        # B_p += A_p B_q
                        split_full(src, NSEG + s, hv, mh_s, ml_s)
                        split_frag(x_frag, xh_s, xl_s)
                        mul_add(mh_s, ml_s, xh_s, xl_s, b_frag)
                        if zero_q != 0:
                            zero_new = 1
                        else:
                            # A_p <- A_p A_q (this CTA's columns of it)
                            T.copy(src[NSEG + q_slot, hv, 0:K, v0:v0 + BV], x_frag)
                            split_frag(x_frag, xh_s, xl_s)  # x_frag is free once split: the product goes there
                            T.clear(x_frag)
                            mul_add(mh_s, ml_s, xh_s, xl_s, x_frag)
                            T.copy(x_frag, dst[NSEG + s, hv, 0:K, v0:v0 + BV])
                    if zero_p == 0 and p < offset and not (first_round != 0 and p == 0):
                        # no partner this round: the map passes through
                        T.copy(src[NSEG + s, hv, 0:K, v0:v0 + BV], x_frag)
                        T.copy(x_frag, dst[NSEG + s, hv, 0:K, v0:v0 + BV])
                    # complete this round (a decaying segment's map is complete from the start): B is the state,
                    # written once; an incomplete map's B goes on to the next round
                    if zero_new != 0:
                        T.copy(b_frag, cp_h0[s + 1 - reverse, hv, 0:K, v0:v0 + BV])
                    else:
                        T.copy(b_frag, dst[s, hv, 0:K, v0:v0 + BV])
                    if vb == 0:
                        zdst[s, hv] = zero_new

    return gdn_cp_scan
