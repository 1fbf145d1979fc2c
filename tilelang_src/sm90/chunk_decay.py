"""Each chunk's summed log-decay from the raw gates, for the segment plan where no chunk prep formed g's cumsum
(the prep-free forward, gdn_fwd_noprep.py, under context parallelism). One CTA per chunk slot (common/seq_index.py),
one thread per v-head:

    decay[t_last, hv] = sum over the chunk's tokens t of g[t, hv],   t_last = the chunk's last token

the only rows of its g_cumsum argument that gdn_seg_plan reads (there a chunk's last row of the chunk-local cumsum
holds the chunk's decay). The other rows are not written; the padding tail's slots write nothing."""

import tilelang.language as T

from common.grid_dependency import grid_dependency
from common.seq_index import chunk_of_slot


def gdn_chunk_decay_sm90(BT: int = 64, threads: int = 128, pdl: bool = False):
    num_tokens = T.dynamic("num_tokens")
    HV = T.dynamic("num_v_heads")
    N1 = T.dynamic("num_seqs_plus_one")
    accum = "float32"

    @T.prim_func
    def gdn_chunk_decay(
        g: T.Tensor((num_tokens, HV), accum),  # the raw log decays
        cu_seqlens: T.Tensor((N1,), "int32"),
        decay: T.Tensor((num_tokens, HV), accum),  # written at each chunk's last token only
        num_slots: T.int32,  # ceil(T / BT) + N: every chunk's slot
    ):
        with T.Kernel(num_slots, T.ceildiv(HV, threads), threads=threads) as (slot, hb):
            grid_dependency(pdl)
            tx = T.get_thread_binding()
            seq = T.alloc_var("int32", init=0)
            hi = T.alloc_var("int32", init=0)
            seq_end = T.alloc_var("int32", init=0)
            acc = T.alloc_var(accum, init=0.0)
            t0 = chunk_of_slot(cu_seqlens, N1 - 1, num_tokens, slot, BT, seq, hi, seq_end)
            n_rows = T.min(seq_end - t0, BT)  # <= 0 for the padding tail's slots
            hv = hb * threads + tx
            if n_rows > 0 and hv < HV:
                # rows of one token are HV consecutive floats: a warp's loads of a row are one transaction
                for r in T.unroll(BT):
                    if r < n_rows:
                        acc += g[t0 + r, hv]
                decay[t0 + n_rows - 1, hv] = acc

    return gdn_chunk_decay
