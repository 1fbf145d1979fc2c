"""Loads of one chunk into a shared-memory ring stage, for the producer warps of the sequential
kernels: TMA when the chunk is full, element copies zero-filled past the sequence end otherwise
(rows of the next sequence are never read, so its NaN/Inf cannot leak into this one)."""

import tilelang.language as T


@T.macro
def load_rows(src, ring, stage, bars, t0, seq_end, head, col0, BT, width, dtype):
    """ring[stage, r, c] <- src[t0 + r, head, col0 + c] for the rows r of the sequence, 0 past its end;
    a TMA load completes on the mbarrier bars[stage]."""
    if t0 + BT <= seq_end:
        T.tma_copy(src[t0:t0 + BT, head, col0:col0 + width], ring[stage, :, :], barrier=bars[stage])
    else:
        for r, c in T.Parallel(BT, width):
            ring[stage, r, c] = T.if_then_else(t0 + r < seq_end, src[t0 + r, head, col0 + c], T.cast(0, dtype))
        T.fence_proxy_async()


@T.macro
def load_gate_beta(g_cumsum, beta, g_ring, b_ring, stage, t0, seq_end, hv, BT):
    """The chunk's cumsum (padded rows repeat the last real value, so gamma_last is the true decay)
    and beta (0 on padded rows)."""
    for r in T.Parallel(BT):
        g_ring[stage, r] = g_cumsum[T.min(t0 + r, seq_end - 1), hv]
        b_ring[stage, r] = T.if_then_else(t0 + r < seq_end, beta[T.min(t0 + r, seq_end - 1), hv], 0.0)
