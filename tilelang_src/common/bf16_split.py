"""The correction's fp32 operands on bf16 tensor cores (sm90/cp_correct.py, sm90/cp_scan.py): x = hi + lo with
hi = bf16(x) and lo = bf16(x - hi), and a product M X taken as hi_M hi_X + hi_M lo_X + lo_M hi_X, which keeps about 16
significant bits of the fp32 operands."""

import tilelang.language as T


@T.macro
def store_split(hi_s, lo_s, a, b, val):
    """hi_s[a, b], lo_s[a, b] <- the bf16 split of the fp32 value val."""
    hi_s[a, b] = T.cast(val, "bfloat16")
    lo_s[a, b] = T.cast(val - T.cast(T.cast(val, "bfloat16"), "float32"), "bfloat16")


def split_slots(cp_out):
    """cp_out [NGRID, HV, K, V] fp32 seen as [NGRID, HV, 2, K, V] bf16: a slot's high part in the first half of its
    bytes, its low part in the second. The warm-up pass leaves the transition matrices so (`warmup` = 2:
    store_split_slot) for the walk that loads them split (sm90/cp_correct.py split_m); end states stay fp32. Use it
    unnamed (split_slots(cp_out)[...]): a view bound to a name in a kernel renames the kernel's cp_out parameter after
    that name (TileLang 0.1.15), and with it the launcher's signature."""
    ngrid, hv, k, v = cp_out.shape
    return T.view(cp_out, (ngrid, hv, 2, k, v), "bfloat16")


@T.macro
def store_split_slot(cp_out, row, hv, a, c, val):
    """split_slots(cp_out)[row, hv, 0 and 1, a, c] <- the bf16 split of the fp32 value val: the same bits as
    store_split's."""
    split_slots(cp_out)[row, hv, 0, a, c] = T.cast(val, "bfloat16")
    split_slots(cp_out)[row, hv, 1, a, c] = T.cast(val - T.cast(T.cast(val, "bfloat16"), "float32"), "bfloat16")


@T.macro
def split_state_columns(start, n, hv, v0, state_v_first, hi_s, lo_s, K, BV):
    """hi_s, lo_s [K, BV] <- the bf16 split of columns v0 .. v0 + BV of state n, head hv of start ([N, HV, K, V], or
    [N, HV, V, K] when state_v_first; as common/segments.py load_state reads it): the scans' start state
    (sm90/cp_scan.py, sm90/cp_scan_split.py)."""
    for a, b in T.Parallel(K, BV):
        store_split(hi_s, lo_s, a, b,
                    T.if_then_else(state_v_first != 0, start[n, hv, v0 + b, a], start[n, hv, a, v0 + b]))
