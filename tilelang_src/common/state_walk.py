"""The fp32 state a forward walker's math warpgroups start a segment from and leave at its end, as macros shared by
sm90/gdn_fwd_rs.py and sm90/gdn_fwd_noprep.py: S^T of `rows` V rows from V row vg of v-head hv, in registers
(s_frag [rows, K]). The warm-up pass (warmup != 0) starts from zero, or from the identity in its transition-matrix CTAs
(is_m), and leaves cp_out's row; the main pass starts from cp_correct's corrected state (has_prev: not the sequence's
first segment), from h0 or from zero, and the sequence's last segment (is_last) stores ht. h0 and ht are [N, HV, K, V],
or [N, HV, V, K] with state_v_first. (store_end_state's `num_segs` is the kernels' NSEG under its own name: a macro
parameter bound to a symbolic dimension renames it, and the kernel's signature with it.)"""

import tilelang.language as T

from common.bf16_split import store_split_slot
from common.segments import load_state_t


@T.macro
def load_start_state(s_frag, rows, K, vg, hv, seg, n, is_m, n_iter, has_prev, warmup, use_h0, num_seqs,
                     state_v_first, h0, cp_h0):
    if warmup != 0:
        for a, b in T.Parallel(rows, K):
            s_frag[a, b] = T.if_then_else(is_m != 0 and vg + a == b, 1.0, 0.0)
    elif has_prev and n_iter > 0:
        for a, b in T.Parallel(rows, K):
            s_frag[a, b] = cp_h0[seg, hv, b, vg + a]
    elif use_h0 != 0 and n < num_seqs:
        load_state_t(s_frag, h0, n, hv, vg, state_v_first, K, rows)
    else:
        T.clear(s_frag)


@T.macro
def store_end_state(s_frag, rows, K, vg, hv, seg, n, is_m, n_iter, is_last, warmup, store_ht, state_v_first, num_segs,
                    cp_out, ht):
    if warmup != 0:
        if n_iter > 0:
            if warmup == 2 and is_m != 0:  # the transition split for the walk (sm90/cp_correct.py split_m)
                for a, b in T.Parallel(rows, K):
                    store_split_slot(cp_out, num_segs + seg, hv, b, vg + a, s_frag[a, b])
            else:
                for a, b in T.Parallel(rows, K):
                    cp_out[is_m * num_segs + seg, hv, b, vg + a] = s_frag[a, b]
    elif store_ht != 0 and is_last:
        if state_v_first != 0:
            T.copy(s_frag, ht[n, hv, vg:vg + rows, 0:K])
        else:
            for a, b in T.Parallel(rows, K):
                ht[n, hv, b, vg + a] = s_frag[a, b]
