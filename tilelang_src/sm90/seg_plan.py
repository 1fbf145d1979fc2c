"""Segment plan for the sequential kernels (context parallelism), computed on the device.

One warp per (segment slot, v-head). Segment slot s of sequence i holds chunks
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
LANES = 32  # a warp: one chunk decay per lane per step of the warm-up's scan


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
        # one warp per (segment slot, v-head): the warm-up's chunk decays are loaded 32 at a time, one per lane,
        # and summed by a scan across the warp, so a segment of up to 32 chunks costs one load latency (one
        # thread per pair walked them in dependent batches: 10 us of a (4, 8) 1x8192 backward's 0.30 ms on an
        # H100, 27 us at 1x32768, both segment plans' kernels together; by warps 9 and 7 us, the backward 0.970x and
        # 0.984x its time there, 0.977x by geomean over (4, 8) and (2, 4) x 4 mixes; 40th session,
        # benchmarks/results/s40/README.md)
        warps = threads // LANES
        with T.Kernel(T.ceildiv(NSEG * HV, warps), threads=threads) as (bx,):
            grid_dependency(pdl)
            tx = T.get_thread_binding()
            n = T.alloc_var("int32")
            hi = T.alloc_var("int32")
            seq_start = T.alloc_var("int32")
            seq_end = T.alloc_var("int32")
            carry = T.alloc_var(accum)  # the decays summed over the steps before this one
            run = T.alloc_var(accum)  # this lane's inclusive sum within the step
            count = T.alloc_var("int32")
            done = T.alloc_var("int32")
            cb = T.alloc_var("int32")
            lane = tx % LANES
            idx = bx * warps + tx // LANES
            if idx < NSEG * HV:  # the same for all lanes of a warp: the shuffles below see the whole warp
                seg = idx // HV
                hv = idx % HV
                num_seqs = N1 - 1
                find_slot(cu_seqlens, num_seqs, num_tokens, seg, seg_tokens, n, hi, seq_start, seq_end)
                num_chunks = T.ceildiv(seq_end - seq_start, BT)
                seg_chunks = seg_tokens // BT
                j = seg - (seq_start // seg_tokens + n)
                c_lo = j * seg_chunks
                c_hi = T.min(c_lo + seg_chunks, num_chunks)
                is_last = n < num_seqs and j == T.max(T.ceildiv(num_chunks, seg_chunks) - 1, 0)
                if lane == 0:
                    if hv == 0:
                        seg_seq[seg] = n
                    ranges[seg, hv, 0] = c_lo
                    ranges[seg, hv, 1] = T.max(c_hi - c_lo, 0)
                    ranges[seg, hv, 2] = T.if_then_else(j > 0, 1, 0) + T.if_then_else(is_last, 2, 0)
                if warmup != 0:
                    # the chunks a warm-up may run, in the order it accumulates their decays: this
                    # segment's from its last backwards (forward), or the next segment's from its first
                    # (reverse); none for a sequence's last segment, whose end nobody needs
                    n_walk = T.if_then_else(
                        c_hi < num_chunks,
                        T.if_then_else(reverse != 0, T.min(c_hi + seg_chunks, num_chunks) - c_hi, c_hi - c_lo), 0)
                    carry = 0.0
                    count = n_walk
                    done = 0
                    cb = 0
                    # a step: lane l holds walked chunk m = 32 cb + l (a chunk's last row holds its decay; the
                    # sequence's last chunk may be partial: it is only walked in reverse, where its decay still
                    # decides between warm-up and fallback); the inclusive scan gives every lane the sum over
                    # chunks 0..m, and the warm-up needs the fewest chunks whose sum falls below the threshold
                    while done == 0 and cb * LANES < n_walk:
                        m = cb * LANES + lane
                        c_w = T.if_then_else(reverse != 0, c_hi + m, c_hi - 1 - m)
                        run = T.if_then_else(
                            m < n_walk, g_cumsum[T.min(seq_start + c_w * BT + BT - 1, seq_end - 1), hv], 0.0)
                        for d in T.unroll(5):  # inclusive scan over the lanes: offsets 1, 2, 4, 8, 16
                            up = T.shfl_up(run, 1 << d)
                            run = run + T.if_then_else(lane >= (1 << d), up, 0.0)
                        # the first lane whose sum is below the threshold (decays are <= 0: the sums only fall),
                        # as a chunk count; n_walk + 1 where none is
                        first = T.warp_reduce_min(
                            T.if_then_else(m < n_walk and carry + run < WARMUP_LOG_DECAY, m + 1, n_walk + 1))
                        if first <= n_walk:
                            count = first
                            done = 1
                        carry = carry + T.shfl_sync(run, LANES - 1)
                        cb = cb + 1
                    if lane == 0:
                        w_first = T.if_then_else(reverse != 0, c_hi, c_hi - count)
                        cp_plan[seg, hv] = T.if_then_else(done != 0, count, -count)
                        ranges[NSEG + seg, hv, 0] = w_first
                        ranges[NSEG + seg, hv, 1] = count
                        ranges[NSEG + seg, hv, 2] = 0
                        ranges[2 * NSEG + seg, hv, 0] = w_first
                        ranges[2 * NSEG + seg, hv, 1] = T.if_then_else(done != 0, 0, count)
                        ranges[2 * NSEG + seg, hv, 2] = 4

    return gdn_seg_plan
