"""The symbolic sizes of the sequential walks' kernels (the forwards' and the state gradient's: one CTA per segment
and v-head walking its chunks; docs/gdn_chunk_derivation.md, "Segments"), one place for their names: every one is a
bare dimension of some buffer of those kernels (scripts/codegen.py passes each to the launcher by name)."""

from typing import NamedTuple

import tilelang.language as T


class WalkDims(NamedTuple):
    num_tokens: object  # T
    H: object  # q/k heads
    HV: object  # v heads
    N1: object  # sequences + 1 (cu_seqlens)
    NS: object  # initial / final states: N, or 0 without them
    NH: object  # chunk-state slots (the forward storing S~, the state gradient's dh), 1 when none
    NSEG: object  # segment slots
    NGRID: object  # segment CTAs: num_segs (main pass) or 2 * num_segs (warm-up pass)
    NROWS: object  # rows of the chunk-range table


def walk_dims() -> WalkDims:
    return WalkDims(T.dynamic("num_tokens"), T.dynamic("num_qk_heads"), T.dynamic("num_v_heads"),
                    T.dynamic("num_seqs_plus_one"), T.dynamic("num_states"), T.dynamic("num_h_slots"),
                    T.dynamic("num_segs"), T.dynamic("num_seg_ctas"), T.dynamic("num_range_rows"))


class CorrectionDims(NamedTuple):
    HV: object  # v heads
    N1: object  # sequences + 1 (cu_seqlens)
    NS: object  # start states (h0, or dht in reverse): N, or 0 without them
    NSEG: object  # segment slots
    NGRID: object  # rows of the warm-up pass's output: 2 * num_segs (E, then M)


def correction_dims() -> CorrectionDims:
    """The sizes of context parallelism's correction kernels (sm90/cp_correct.py's walk, sm90/cp_scan.py's scan),
    named as walk_dims names them (the same buffers: cu_seqlens, the states, the warm-up pass's output)."""
    return CorrectionDims(T.dynamic("num_v_heads"), T.dynamic("num_seqs_plus_one"), T.dynamic("num_states"),
                          T.dynamic("num_segs"), T.dynamic("num_seg_ctas"))
