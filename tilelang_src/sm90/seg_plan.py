"""Segment plan for the sequential kernels (context parallelism), computed on the device.

One thread per (segment slot, v-head). Segment slot s of sequence i holds chunks
[j * L, (j + 1) * L) of i, where L = seg_tokens / BT and s = floor(cu[i] / seg_tokens) + i + j
(docs/gdn_chunk_derivation.md, "Segments"). Outputs:

  seg_seq[s]      the sequence of slot s (N for slots past the last sequence), so that the
                  fused kernels read their sequence with one load instead of a search;
  ranges[r, hv]   (first chunk, chunk count, flags) of the CTA row r of a fused-kernel pass:
                  rows [0, S) the main pass (flags: 1 = not the sequence's first segment,
                  2 = its last segment), rows [S, 2S) the warm-up end states, rows [2S, 3S) the
                  transition matrices (flags 4 = load V, in the backward dO, as zeros),
                  S = num_segs. Precomputing them keeps the fused kernel's control flow free of
                  searches and selections;
  cp_plan[s, hv]  (only when `warmup` != 0) how many chunks the warm-up pass runs for this
                  segment: the fewest trailing chunks whose summed log-decay falls below
                  WARMUP_LOG_DECAY (their end state then equals the true one to within
                  exp(WARMUP_LOG_DECAY) of the state norm), or minus the segment's chunk count
                  when the decay never gets there (the exact fallback with the transition
                  matrix); 0 for a sequence's last segment, whose end state nobody needs.

With `reverse` != 0 the tables serve the backward's state-gradient recurrence, which walks a
sequence from its end (gdn_bwd_dh.py): the gradient at the end of segment s comes from segment
s + 1, so its warm-up and transition rows run segment s + 1's chunks: the fewest leading
chunks of segment s + 1 whose summed log-decay falls below the threshold, or all of them (the
fallback); the main-pass rows are the same as the forward's.
"""

import tilelang.language as T

from common.grid_dependency import grid_dependency
from common.seq_index import find_slot

WARMUP_LOG_DECAY = -10.0
LOAD_BATCH = 8  # chunk decays loaded together by one thread


def gdn_seg_plan_sm90(BT: int = 64, threads: int = 128, pdl: bool = False):
    num_tokens = T.dynamic("num_tokens")
    HV = T.dynamic("num_v_heads")
    N1 = T.dynamic("num_seqs_plus_one")
    NSEG = T.dynamic("num_segs")
    NROWS = T.dynamic("num_range_rows")
    accum = "float32"

    @T.prim_func
    def gdn_seg_plan(
        cu_seqlens: T.Tensor((N1,), "int32"),
        g_cumsum: T.Tensor((num_tokens, HV), accum),
        seg_seq: T.Tensor((NSEG,), "int32"),
        ranges: T.Tensor((NROWS, HV, 3), "int32"),  # NROWS = num_segs, or 3 * num_segs with warm-up
        cp_plan: T.Tensor((NSEG, HV), "int32"),
        seg_tokens: T.int32,
        warmup: T.int32,
        reverse: T.int32,  # 1: the backward's tables (the warm-up runs the next segment's first chunks)
    ):
        with T.Kernel(T.ceildiv(NSEG * HV, threads), threads=threads) as (bx,):
            grid_dependency(pdl)
            tx = T.get_thread_binding()
            n = T.alloc_var("int32")
            hi = T.alloc_var("int32")
            seq_start = T.alloc_var("int32")
            seq_end = T.alloc_var("int32")
            acc = T.alloc_var(accum)
            count = T.alloc_var("int32")
            done = T.alloc_var("int32")
            decay = T.alloc_local((LOAD_BATCH,), accum)
            idx = bx * threads + tx
            if idx < NSEG * HV:
                seg = idx // HV
                hv = idx % HV
                num_seqs = N1 - 1
                find_slot(cu_seqlens, num_seqs, num_tokens, seg, seg_tokens, n, hi, seq_start, seq_end)
                if hv == 0:
                    seg_seq[seg] = n
                num_chunks = T.ceildiv(seq_end - seq_start, BT)
                seg_chunks = seg_tokens // BT
                j = seg - (seq_start // seg_tokens + n)
                c_lo = j * seg_chunks
                c_hi = T.min(c_lo + seg_chunks, num_chunks)
                is_last = n < num_seqs and j == T.max(T.ceildiv(num_chunks, seg_chunks) - 1, 0)
                ranges[seg, hv, 0] = c_lo
                ranges[seg, hv, 1] = T.max(c_hi - c_lo, 0)
                ranges[seg, hv, 2] = T.if_then_else(j > 0, 1, 0) + T.if_then_else(is_last, 2, 0)
                if warmup != 0:
                    acc = 0.0
                    count = 0
                    done = 0
                    # the chunks a warm-up may run, in the order it accumulates their decays: this
                    # segment's from its last backwards (forward), or the next segment's from its first
                    # (reverse); none for a sequence's last segment, whose end nobody needs
                    n_walk = T.if_then_else(
                        c_hi < num_chunks,
                        T.if_then_else(reverse != 0, T.min(c_hi + seg_chunks, num_chunks) - c_hi, c_hi - c_lo), 0)
                    # a chunk's last row holds its decay; the sequence's last chunk may be partial (it is
                    # only walked in reverse, where its decay still decides between warm-up and fallback).
                    # The decays are loaded LOAD_BATCH at a time (independent loads in flight together:
                    # a head that never decays walks every chunk of its segment, one load latency each
                    # when they are loaded one by one), then accumulated in order
                    for cb in T.serial(T.ceildiv(n_walk, LOAD_BATCH)):
                        for u in T.unroll(LOAD_BATCH):
                            m = cb * LOAD_BATCH + u
                            c_w = T.if_then_else(reverse != 0, c_hi + m, c_hi - 1 - m)
                            decay[u] = T.if_then_else(
                                m < n_walk, g_cumsum[T.min(seq_start + c_w * BT + BT - 1, seq_end - 1), hv], 0.0)
                        for u in T.unroll(LOAD_BATCH):
                            if done == 0 and cb * LOAD_BATCH + u < n_walk:
                                acc += decay[u]
                                count += 1
                                if acc < WARMUP_LOG_DECAY:
                                    done = 1
                    w_first = T.if_then_else(reverse != 0, c_hi, c_hi - count)
                    cp_plan[seg, hv] = T.if_then_else(done != 0, count, -count)
                    ranges[NSEG + seg, hv, 0] = w_first
                    ranges[NSEG + seg, hv, 1] = count
                    ranges[NSEG + seg, hv, 2] = 0
                    ranges[2 * NSEG + seg, hv, 0] = w_first
                    ranges[2 * NSEG + seg, hv, 1] = T.if_then_else(done != 0, 0, count)
                    ranges[2 * NSEG + seg, hv, 2] = 4

    return gdn_seg_plan
