"""Loads of one chunk into shared memory for producer warps: TMA when the chunk is full, element copies
zero-filled past the sequence end otherwise (rows of the next sequence are never read, so its NaN/Inf
cannot leak into this one). `load_rows` fills a ring stage (the sequential kernels), `load_tile` one
buffer (the warp-specialized chunk gradient).

Test a full chunk on the unclamped difference (`t0 + BT <= seq_end`), never as `n_valid == BT` on the
clamped count: so written, nvcc 13.0 compiled the test in one producer warp of the chunk gradient into the
predicate output of the min/max forming n_valid, and that warp took the TMA path in partial chunks
(benchmarks/results/H200_bwdc_ws.md, "The NaN leak")."""

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


@T.macro
def load_gate_cumsum_beta(g, beta, g_ring, b_ring, stage, t0, seq_end, hv, lane, sc, unit=1.0, gates=None):
    """One warp (lane 0..31) forms the chunk's cumsum of the per-token log decays g (a 64-row chunk, rows 2 lane and
    2 lane + 1 per lane: their sum scanned across the warp by shuffles) into g_ring[stage] and loads beta into
    b_ring[stage]; rows past the sequence's end add 0 (so the cumsum repeats its last real value there, as
    load_gate_beta's rows) and have beta 0. sc: 3 fp32 locals of the warp (4 with gates). unit (trace time): the
    cumsum's scale (LOG2E: in log2 units). gates (trace time): None, or (gam_ring, gam2_ring, r_ring, scale) for a
    cumsum in log2 units: the per-row gates gamma = 2^gc, scale * gamma and r = 2^(gc_last - gc) into those rings'
    stage as well, from the same fp32 values (gdn_fwd_noprep.py's gates_in_loader)."""
    r0 = 2 * lane
    sc[0] = T.if_then_else(t0 + r0 < seq_end, g[T.min(t0 + r0, seq_end - 1), hv], 0.0)
    sc[1] = T.if_then_else(t0 + r0 + 1 < seq_end, g[T.min(t0 + r0 + 1, seq_end - 1), hv], 0.0)
    if unit != 1.0:
        sc[0] = sc[0] * unit
        sc[1] = sc[1] * unit
    sc[2] = sc[0] + sc[1]
    for d in T.unroll(5):  # inclusive scan of the pair sums over the lanes: 1, 2, 4, 8, 16
        up = T.shfl_up(sc[2], 1 << d)
        sc[2] = sc[2] + T.if_then_else(lane >= (1 << d), up, 0.0)
    g_ring[stage, r0] = sc[2] - sc[1]
    g_ring[stage, r0 + 1] = sc[2]
    if gates is not None:
        gam_ring, gam2_ring, r_ring, scale = gates
        sc[3] = T.shfl_sync(sc[2], 31)  # the chunk's last cumsum (row 63: lane 31's second row)
        gam_ring[stage, r0] = T.exp2(sc[2] - sc[1])
        gam_ring[stage, r0 + 1] = T.exp2(sc[2])
        gam2_ring[stage, r0] = scale * T.exp2(sc[2] - sc[1])
        gam2_ring[stage, r0 + 1] = scale * T.exp2(sc[2])
        r_ring[stage, r0] = T.exp2(sc[3] - (sc[2] - sc[1]))
        r_ring[stage, r0 + 1] = T.exp2(sc[3] - sc[2])
    b_ring[stage, r0] = T.if_then_else(t0 + r0 < seq_end, beta[T.min(t0 + r0, seq_end - 1), hv], 0.0)
    b_ring[stage, r0 + 1] = T.if_then_else(t0 + r0 + 1 < seq_end, beta[T.min(t0 + r0 + 1, seq_end - 1), hv], 0.0)


@T.macro
def copy_tile_rows(src, dst, t0, head, n_valid, BT, width, dtype):
    """dst[r, c] <- src[t0 + r, head, c] for the chunk's rows, 0 past n_valid, a quarter of the rows per step:
    for one producer warp, 8 loads of 16 bytes in flight per thread fit its registers (the whole tile at once
    held 32 and spilled)."""
    for qtr in T.serial(4):
        for r, c in T.Parallel(BT // 4, width):
            row = qtr * (BT // 4) + r
            dst[row, c] = T.if_then_else(row < n_valid, src[t0 + row, head, c], T.cast(0, dtype))


@T.macro
def load_tile(src, dst, bar, t0, head, n_valid, full, BT, width, dtype, tma):
    """dst <- the chunk's rows of src[:, head, :]: by TMA on bar[0] when `tma` (trace time) and `full` (the
    chunk is whole), else by copy_tile_rows (fenced for the async proxy). The caller arrives on bar."""
    if tma:
        if full:
            T.tma_copy(src[t0:t0 + BT, head, 0:width], dst, barrier=bar[0])
        else:
            copy_tile_rows(src, dst, t0, head, n_valid, BT, width, dtype)
            T.fence_proxy_async()
    else:
        copy_tile_rows(src, dst, t0, head, n_valid, BT, width, dtype)
        T.fence_proxy_async()
