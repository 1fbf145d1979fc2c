"""The sequential kernels' side of segments (docs/gdn_chunk_derivation.md, "Segments"): what a CTA row of a
pass runs, read from the tables of sm90/seg_plan.py, and the fp32 states it starts from or ends with.

Used by the sm120 forward and state-gradient programs and by cp_correct.py (SASS the same as with the code
written inline) and by the SM90 state-gradient kernel, where TileLang's sync planner then leaves out one
warp-level named barrier (32 threads) before the dO producer warp's zero-filled element copy of a partial
chunk: that warp alone writes the buffer and publishes it with a fence and an mbarrier arrive, so the
barrier orders nothing. The SM90 forward (sm90/gdn_fwd.py) keeps these lines inline: through the macros
the planner drops WG1's warpgroup barrier at the top of a chunk and puts one before every store of its
W loop instead (sixteen per chunk; correct, but not what the kernel wants). So do the register-operand forwards
(sm90/gdn_fwd_rs.py, gdn_fwd_noprep.py), whose segment row and transposed start and end states repeat each other:
through segment_row or macros for those states the planner moves each math warpgroup's barrier across its O
hand-off or its state stores (thirty-first session), which would change the code their GPU runs tested."""

import tilelang.language as T

from common.bf16_split import store_split_slot
from common.seq_index import seq_bound


@T.macro
def walk_span(cu_seqlens, n, num_tokens, seg_tokens, BT, first: T.Ref, last_j: T.Ref):
    """For a correction kernel's CTA of sequence n (sm90/cp_correct.py, cp_correct_rs.py): first <- the sequence's
    first segment slot, last_j <- its walk's last step (num_segs - 2); returns num_segs. first and last_j are int32
    variables of the caller, not expressions: TileLang would inline the divisions (64-bit, with their floor-rounding
    fix-ups) into the offset of every load and store of the walk's loop."""
    seq_start = seq_bound(cu_seqlens, n, num_tokens)
    seq_end = T.max(seq_bound(cu_seqlens, n + 1, num_tokens), seq_start)
    num_segs = T.ceildiv(T.ceildiv(seq_end - seq_start, BT), seg_tokens // BT)
    first = seq_start // seg_tokens + n
    last_j = num_segs - 2
    return num_segs


@T.macro
def grid_row(bx, warmup, num_segs, fallback_first: bool):
    """The CTA row that grid row bx of a pass runs. The warm-up pass launches 2 num_segs rows, the end states (or
    gradients) [0, num_segs) and the transition matrices [num_segs, 2 num_segs); blocks start in the order of their
    linear index, segment row slowest. With fallback_first (trace time) the warm-up pass runs the transition rows
    first: they are the long ones (every chunk of a segment, on the fallback heads; the other heads' transition
    rows have no chunk and end at once), so they start in the first wave and the short end-state rows fill the SMs
    around them, instead of the long rows starting last and setting the pass's tail. The main pass (warmup = 0)
    keeps its order. The argument has the name of the symbolic size it is given (num_segs): TileLang names a
    kernel's size after the macro argument bound to it (named NSEG here, gdn_fwd's CUDA kernel took an argument
    NSEG instead of num_segs; its launcher, built from the program's own sizes, kept num_segs)."""
    if fallback_first:
        # a variable, not an expression: TileLang would inline the selection into the 64-bit offset of every load
        # and store that uses the row
        row = T.alloc_var("int32", init=0)
        row = T.if_then_else(warmup != 0, T.if_then_else(bx < num_segs, bx + num_segs, bx - num_segs), bx)
        return row
    else:
        return bx


@T.macro
def segment_row(seg_seq, ranges, cu_seqlens, seg, row, hv, num_seqs, num_tokens, BT):
    """CTA row `row` over segment slot `seg`: (n, c_first, n_iter, flags, seq_start, seq_end, zero_end).

    n is the slot's sequence (num_seqs for a padding slot, whose seq_end = seq_start: no chunks); the row
    runs chunks c_first .. c_first + n_iter - 1 of it; flags: 1 = not the sequence's first segment, 2 = its
    last, 4 = a transition row, whose V (dO in the backward) loads as zeros: zero_end, the end the loads of
    that tensor use, then lies before every chunk."""
    n = seg_seq[seg]
    c_first = ranges[row, hv, 0]
    n_iter = ranges[row, hv, 1]
    flags = ranges[row, hv, 2]
    seq_start = seq_bound(cu_seqlens, n, num_tokens)
    seq_end = T.max(seq_bound(cu_seqlens, T.min(n + 1, num_seqs), num_tokens), seq_start)
    zero_end = seq_end - (flags // 4) * (seq_end + BT)
    return n, c_first, n_iter, flags, seq_start, seq_end, zero_end


@T.macro
def load_state(frag, src, n, hv, v0, state_v_first, K, BV):
    """frag [K, BV] <- columns v0 .. v0 + BV of state n, head hv of src ([N, HV, K, V], or [N, HV, V, K] when
    state_v_first)."""
    if state_v_first != 0:
        for a, b in T.Parallel(K, BV):
            frag[a, b] = src[n, hv, v0 + b, a]
    else:
        T.copy(src[n, hv, 0:K, v0:v0 + BV], frag)


@T.macro
def load_state_t(frag, src, n, hv, v0, state_v_first, K, rows):
    """frag [rows, K] <- load_state's columns transposed, S^T's rows v0 .. v0 + rows: the start state of the walkers
    that keep S^T in registers (common/state_walk.py, sm90/cp_correct_rs.py)."""
    if state_v_first != 0:
        T.copy(src[n, hv, v0:v0 + rows, 0:K], frag)
    else:
        for a, b in T.Parallel(rows, K):
            frag[a, b] = src[n, hv, b, v0 + a]


@T.macro
def store_state(frag, dst, n, hv, v0, state_v_first, K, BV):
    """The reverse of load_state."""
    if state_v_first != 0:
        for a, b in T.Parallel(K, BV):
            dst[n, hv, v0 + b, a] = frag[a, b]
    else:
        T.copy(frag, dst[n, hv, 0:K, v0:v0 + BV])


@T.macro
def start_state(frag, warmup, is_m, v0, from_seg, seg_states, seg, from_user, user_states, n, hv, state_v_first,
                K, BV):
    """The fp32 state (forward) or state gradient (backward) a CTA row starts from: in the warm-up pass 0, or
    the identity's columns for a transition row (is_m); else the corrected segment state seg_states[seg]
    (from_seg), the caller's state user_states[n] (from_user: h0 or dht), or 0."""
    if warmup != 0:
        for a, b in T.Parallel(K, BV):
            frag[a, b] = T.if_then_else(is_m != 0 and a == v0 + b, 1.0, 0.0)
    elif from_seg:
        T.copy(seg_states[seg, hv, 0:K, v0:v0 + BV], frag)
    elif from_user:
        load_state(frag, user_states, n, hv, v0, state_v_first, K, BV)
    else:
        T.clear(frag)


@T.macro
def end_state(frag, warmup, n_iter, cp_out, is_m, num_segs, seg, store, dst, n, hv, v0, state_v_first, K, BV):
    """What a CTA row leaves: in the warm-up pass its end state (or transition matrix, is_m) into
    cp_out[is_m * num_segs + seg] when it ran any chunk; else, when `store`, the state dst[n] (ht or dh0)."""
    if warmup != 0:
        if n_iter > 0:
            if warmup == 2 and is_m != 0:  # the transition split for the walk (sm90/cp_correct.py split_m)
                for a, b in T.Parallel(K, BV):
                    store_split_slot(cp_out, num_segs + seg, hv, a, v0 + b, frag[a, b])
            else:
                T.copy(frag, cp_out[is_m * num_segs + seg, hv, 0:K, v0:v0 + BV])
    elif store:
        store_state(frag, dst, n, hv, v0, state_v_first, K, BV)
