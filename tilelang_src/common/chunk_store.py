"""Masked stores of a chunk's rows from a shared-memory tile (SM90 programs)."""

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
def add_chunk_rows_in_order(src, dst, count, slot, which, t0, head, rank, group, n_valid, BT, width, dtype,
                            threads=128):
    """A chunk's tile summed over a group of CTAs (the fused backward's dq and dk in groups of v-heads) into a dst
    that starts at zero: with group > 1 each CTA adds src[r, c] to dst[t0 + r, head, c] by reductions in L2
    (red.add in dst's dtype, fire and forget: no load of dst on the CTA's path). Ranks 0 and 1 add in either order
    (0 + a + b == 0 + b + a, bit for bit); rank r >= 2 first waits until count[slot, head, which] reaches
    r * threads, every thread of each lower rank having fenced its reductions and counted itself (acquire / fence
    then count), so that the sum's rounding order is fixed: deterministic. Each of the `threads` threads running this
    must count once. With group == 1 a plain store_chunk_rows."""
    if group > 1:
        if rank >= 2:
            while T.atomic_load(count[slot, head, which], memory_order="acquire") != rank * threads:
                T.evaluate(0)
        for r, c4 in T.Parallel(BT, width // 4):
            if r < n_valid:
                T.atomic_addx4(dst[t0 + r, head, c4 * 4:c4 * 4 + 4], src[r, c4 * 4:c4 * 4 + 4])
        if rank < group - 1 and group > 2:
            T.evaluate(T.call_extern("handle", "__threadfence"))  # this thread's reductions performed first
            T.atomic_add(count[slot, head, which], 1)
    else:
        store_chunk_rows(src, dst, t0, head, n_valid, n_valid, BT, width, dtype)
