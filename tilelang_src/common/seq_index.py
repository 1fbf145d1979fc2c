"""Device-side sequence bookkeeping shared by the GDN kernels (no host planning).

Chunks are aligned to each sequence's start. Chunk j of sequence i starts at token
cu[i] + BT*j and is given the *slot*

    slot(i, j) = floor(cu[i] / BT) + i + j

Slots are strictly increasing over (i, j), and every slot is below ceil(T / BT) + N,
so a chunk-parallel kernel launches that many CTAs (a number the host knows without
reading cu_seqlens) and each CTA finds its chunk with a binary search over cu_seqlens.
Slots from slot(N, 0) on cover the padding tail [cu[N], T) in BT-token pieces.
Derivation: docs/gdn_chunk_derivation.md, "Chunk slots".
"""

import tilelang.language as T


@T.macro
def seq_bound(cu_seqlens, i, num_tokens):
    # malformed offsets are clamped into [0, T] instead of reading or writing out of bounds
    return T.min(T.max(cu_seqlens[i], 0), num_tokens)


@T.macro
def find_slot(cu_seqlens, num_seqs, num_tokens, slot, BT, lo: T.Ref, hi: T.Ref, start: T.Ref, end: T.Ref):
    """lo <- the sequence that owns `slot` (num_seqs for the padding tail); start <- that sequence's first
    token, end <- its end (its start for the tail), both clamped into [0, T] (end >= start).

    `lo`, `hi`, `start` and `end` are int32 vars of the caller (`hi`: the search interval's end). The search
    keeps the bounds it reads: cu[lo] is the last bound that moved the interval's start up (cu[0], loaded
    before the search, if none did) and cu[lo + 1] the last that moved its end down (for lo < num_seqs the end
    started at num_seqs and moved at least once), so no dependent load of cu_seqlens follows the search (two
    more round trips to memory before a CTA's loads could start).
    """
    lo = 0
    hi = num_seqs
    start = seq_bound(cu_seqlens, 0, num_tokens)
    end = start
    # the interval halves each step: at most ceil(log2(num_seqs + 1)) steps, and the loop stops there (a fixed
    # 31-step loop with the test inside cost ~100 instructions per warp for one sequence)
    while lo < hi:
        mid_bound = seq_bound(cu_seqlens, (lo + hi + 1) // 2, num_tokens)
        if mid_bound // BT + (lo + hi + 1) // 2 <= slot:
            start = mid_bound
            lo = (lo + hi + 1) // 2
        else:
            end = mid_bound
            hi = (lo + hi + 1) // 2 - 1
    if lo < num_seqs:
        end = T.max(end, start)
    else:
        end = start


@T.macro
def chunk_of_slot(cu_seqlens, num_seqs, num_tokens, slot, BT, seq: T.Ref, hi: T.Ref, seq_end: T.Ref):
    """For a chunk-parallel CTA: seq <- the slot's sequence (num_seqs for the padding tail),
    seq_end <- that sequence's end (its start for the tail). Returns the chunk's first token."""
    base = T.alloc_var("int32")
    find_slot(cu_seqlens, num_seqs, num_tokens, slot, BT, seq, hi, base, seq_end)
    return base + (slot - (base // BT + seq)) * BT


def chunk_rows(t0, seq, seq_end, num_seqs, num_tokens, BT):
    """The rows of a chunk-parallel CTA's chunk (t0, seq, seq_end from chunk_of_slot): n_valid, the rows
    that belong to the chunk, and n_tail, the rows of the padding tail [cu[N], T) that a tail slot owns
    (at most one of the two is nonzero). A plain function: the caller binds both names and forms
    n_store = T.max(n_valid, n_tail) from them, so that each stays a let of its own and the lowered code is
    the one measured on the GPU (returned as one expression, the store predicates became nested min/max
    selects: another program for nvcc, which once miscompiled a test fused into such a min/max,
    common/chunk_load.py). A full chunk is tested on `seq_end - t0 >= BT`, never on `n_valid == BT`."""
    n_valid = T.max(T.min(seq_end - t0, BT), 0)
    n_tail = T.if_then_else(seq == num_seqs, T.max(T.min(num_tokens - t0, BT), 0), 0)
    return n_valid, n_tail
