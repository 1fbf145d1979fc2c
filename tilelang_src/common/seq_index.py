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
def find_slot(cu_seqlens, num_seqs, num_tokens, slot, BT, lo: T.Ref, hi: T.Ref):
    """lo <- the sequence that owns `slot` (num_seqs for the padding tail).

    `lo` and `hi` are int32 vars of the caller, used as the search interval.
    """
    lo = 0
    hi = num_seqs
    # the interval halves each step: at most ceil(log2(num_seqs + 1)) steps, and the loop stops there (a fixed
    # 31-step loop with the test inside cost ~100 instructions per warp for one sequence)
    while lo < hi:
        if seq_bound(cu_seqlens, (lo + hi + 1) // 2, num_tokens) // BT + (lo + hi + 1) // 2 <= slot:
            lo = (lo + hi + 1) // 2
        else:
            hi = (lo + hi + 1) // 2 - 1


@T.macro
def chunk_of_slot(cu_seqlens, num_seqs, num_tokens, slot, BT, seq: T.Ref, hi: T.Ref, seq_end: T.Ref):
    """For a chunk-parallel CTA: seq <- the slot's sequence (num_seqs for the padding tail),
    seq_end <- that sequence's end (its start for the tail). Returns the chunk's first token.

    find_slot's search, keeping the bounds it reads: cu[seq] is the last bound that moved the interval's
    start up (cu[0], loaded before the search, if none did) and cu[seq + 1] the last that moved its end down
    (for seq < num_seqs the end started at num_seqs and moved at least once), so no dependent load follows
    the search (two more round trips to memory before the chunk's loads could start)."""
    base = T.alloc_var("int32")
    seq = 0
    hi = num_seqs
    base = seq_bound(cu_seqlens, 0, num_tokens)
    seq_end = base
    while seq < hi:
        mid_bound = seq_bound(cu_seqlens, (seq + hi + 1) // 2, num_tokens)
        if mid_bound // BT + (seq + hi + 1) // 2 <= slot:
            base = mid_bound
            seq = (seq + hi + 1) // 2
        else:
            seq_end = mid_bound
            hi = (seq + hi + 1) // 2 - 1
    if seq < num_seqs:
        seq_end = T.max(seq_end, base)
    else:
        seq_end = base
    return base + (slot - (base // BT + seq)) * BT
