"""Masked stores of a chunk's rows from a shared-memory tile, and the padding tail's zeros (sequential kernels)."""

import tilelang.language as T


@T.macro
def store_chunk_rows(src, dst, t0, head, n_valid, n_store, BT, width, dtype):
    """dst[t0 + r, head, c] <- src[r, c] (cast to dst's dtype) for the chunk's rows r < n_valid, and zeros for the
    rows n_valid <= r < n_store (a slot of the padding tail has n_valid = 0 and n_store > 0).

    From shared memory TileLang stores 16-byte row pieces; from an accumulator each 4-byte pair cost ~30
    instructions of 64-bit index arithmetic and guards. NOTE: one condition per store; TileLang 0.1.15
    merges the stores of an if/elif pair into one unconditional store of an uninitialized value."""
    for r, c in T.Parallel(BT, width):
        if r < n_store:
            dst[t0 + r, head, c] = T.if_then_else(r < n_valid, T.cast(src[r, c], dtype), T.cast(0, dtype))


@T.macro
def store_state_tile(src, buf, dst, slot, head, col0, rows, width, tma):
    """dst[slot, head, :, col0:col0 + width] <- src[buf] (a [rows, width] state tile in shared memory, e.g. S~ or
    dS~ of a chunk): by one TMA store when `tma` (trace time; waited for until it has read the tile, so the caller
    may release the buffer next; the tile's writers fenced before handing it over), else by element stores."""
    if tma:
        T.tma_copy(src[buf, :, :], dst[slot, head, 0:rows, col0:col0 + width])
        T.tma_store_wait()
    else:
        for a, c in T.Parallel(rows, width):
            dst[slot, head, a, col0 + c] = src[buf, a, c]


@T.macro
def zero_padding_tail(o, seq_end, num_tokens, head, col0, BT, width, dtype):
    """o[t, head, col0:col0 + width] <- 0 for the padding tail seq_end <= t < num_tokens, BT rows per step (the
    forwards' last sequence's last segment writes it: tokens past cu_seqlens[-1] get o = 0)."""
    for blk in T.serial(T.ceildiv(num_tokens - seq_end, BT)):
        for r, c in T.Parallel(BT, width):
            if seq_end + blk * BT + r < num_tokens:
                o[seq_end + blk * BT + r, head, col0 + c] = T.cast(0, dtype)


@T.macro
def store_seq_rows(src, dst, t0, seq_end, head, col0, BT, width, stage=None):
    """dst[t0 + r, head, col0 + c] <- src[r, c] (src[stage, r, c] for a staged tile) for the rows of the sequence
    (t0 + r < seq_end): a partial chunk's o from its shared-memory tile (16-byte row pieces)."""
    for r, c in T.Parallel(BT, width):
        if t0 + r < seq_end:
            if stage is None:
                dst[t0 + r, head, col0 + c] = src[r, c]
            else:
                dst[t0 + r, head, col0 + c] = src[stage, r, c]


@T.macro
def store_o_walk(o, o_s, o_full, o_free, seq_start, seq_end, c_first, n_iter, hv, c0, BT, BV):
    """The storer warp of the register-operand forwards (sm90/gdn_fwd_rs.py, gdn_fwd_noprep.py): each chunk's O from
    its stage of the two-stage buffer o_s to o (one TMA store for a full chunk, store_seq_rows for a partial one),
    once the math warpgroups filled it (o_full), then the stage back to them (o_free)."""
    for i in T.serial(n_iter):
        t0 = seq_start + (c_first + i) * BT
        T.barrier_wait(o_full[i % 2], (i // 2) % 2)
        if t0 + BT <= seq_end:
            T.tma_copy(o_s[i % 2, :, :], o[t0:t0 + BT, hv, c0:c0 + BV])
            T.tma_store_wait()
        else:
            store_seq_rows(o_s, o, t0, seq_end, hv, c0, BT, BV, i % 2)
        T.barrier_arrive(o_free[i % 2])
