"""The correction's fp32 operands on bf16 tensor cores (sm90/cp_correct.py, sm90/cp_scan.py): x = hi + lo with
hi = bf16(x) and lo = bf16(x - hi), and a product M X taken as hi_M hi_X + hi_M lo_X + lo_M hi_X, which keeps about 16
significant bits of the fp32 operands."""

import tilelang.language as T


@T.macro
def store_split(hi_s, lo_s, a, b, val):
    """hi_s[a, b], lo_s[a, b] <- the bf16 split of the fp32 value val."""
    hi_s[a, b] = T.cast(val, "bfloat16")
    lo_s[a, b] = T.cast(val - T.cast(T.cast(val, "bfloat16"), "float32"), "bfloat16")
