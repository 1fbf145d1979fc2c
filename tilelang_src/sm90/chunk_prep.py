"""Chunk preparation for the GDN forward: chunk-local cumsum of g and the ungated WY
inverse, one CTA per (chunk slot, v-head). Nothing in it is Hopper-specific (128 threads,
three T.gemm, about 54 KB of shared memory), so every kernel family uses it (variants.py).

    gc[t] = sum of g over the chunk up to and including token t          (fp32)
    A     = (I + strictLower(diag(beta) K K^T))^-1 per BT-token chunk     (q dtype)

A carries no gate (docs/gdn_chunk_derivation.md, "Ungated inverse"). The kernel also gives the
fused forward its output's intra-chunk matrix, off the forward's critical path:

    Z     = (scale * Gamma * (Q K^T)) (Gamma * A * beta_col),   Gamma_ij = exp(gc_i - gc_j) (i >= j)

(bf16; A in fp32 here, before its rounding to the q dtype). The 64x64 unit-lower-triangular
inverse is exact blockwise forward substitution in fp32: the four 16x16 diagonal
blocks (one thread per column, in registers), then two merge levels X_lo = -D_hi T_lo D_lo.
Every CTA computes unconditionally (idle slots on zeros) so that barriers never sit
inside a data-dependent branch; only the stores are masked. Tokens of the padding
tail [cu[N], T) get gc = 0, A = 0 and Z = 0.
"""

import tilelang.language as T

from common.chunk_store import store_chunk_rows
from common.seq_index import chunk_of_slot, chunk_rows

LOG2E = 1.4426950408889634
ROW_PAD = 4  # floats of padding per row of the fp32 C x C shared matrices


def gdn_chunk_prep_sm90(
    # task config
    dtype: str = "bfloat16",
    K: int = 128,
    # kernel config
    BT: int = 64,
    threads: int = 128,
):
    assert BT == 64, "the blockwise inverse is written for 64-token chunks"
    num_tokens = T.dynamic("num_tokens")
    H = T.dynamic("num_qk_heads")
    HV = T.dynamic("num_v_heads")
    N1 = T.dynamic("num_seqs_plus_one")
    accum = "float32"

    @T.prim_func
    def gdn_chunk_prep(
        q: T.Tensor((num_tokens, H, K), dtype),
        k: T.Tensor((num_tokens, H, K), dtype),
        g: T.Tensor((num_tokens, HV), accum),
        beta: T.Tensor((num_tokens, HV), accum),
        cu_seqlens: T.Tensor((N1,), "int32"),
        g_cumsum: T.Tensor((num_tokens, HV), accum),
        A: T.Tensor((num_tokens, HV, BT), dtype),
        z: T.Tensor((num_tokens, HV, BT), dtype),
        scale: T.float32,
        num_slots: T.int32,  # slots of this launch: slot0, ..., slot0 + num_slots - 1 (at most 65535)
        slot0: T.int32,
        group: T.int32,  # HV / H, from the launcher: head indices are products, never divisions
    ):
        # grid (v-head in the group, qk-head, slot): the v-heads that share a qk-head's q and k are neighbours in
        # the launch order, so that q and k come from HBM once and from L2 for the rest of the group (with the
        # slot fastest, a group's CTAs were a whole grid plane apart and q, k were read group times). Head
        # indices are block indices and products: TileLang re-derives every index in 64 bits inside each
        # predicated load and store, where a division costs ~100 instructions. The slot is blockIdx.z: the op
        # launches at most 65535 slots at a time
        with T.Kernel(group, H, num_slots, threads=threads) as (j, hq, bz):
            hv = hq * group + j
            slot = slot0 + bz
            num_seqs = N1 - 1

            seq = T.alloc_var("int32", init=0)
            hi = T.alloc_var("int32", init=0)
            seq_end = T.alloc_var("int32", init=0)
            t0 = chunk_of_slot(cu_seqlens, num_seqs, num_tokens, slot, BT, seq, hi, seq_end)
            # rows [t0, t0 + n_valid) belong to the chunk; a slot of the padding tail owns rows up to T
            n_valid, n_tail = chunk_rows(t0, seq, seq_end, num_seqs, num_tokens, BT)
            n_store = T.max(n_valid, n_tail)  # at most one of the two is nonzero

            k_s = T.alloc_shared((BT, K), dtype)
            q_s = T.alloc_shared((BT, K), dtype)
            pg_s = T.alloc_shared((BT, BT), dtype)  # scale * Gamma * (Q K^T)
            ag_s = T.alloc_shared((BT, BT), dtype)  # Gamma * A * beta_col
            g_s = T.alloc_shared((BT,), accum)
            b_s = T.alloc_shared((BT,), accum)
            # rows padded to BT + 4 floats (4 banks apart): the column reads of the merges and the
            # accumulator-layout writes and reads of T and the inverse (8 rows x 4 column pairs per warp)
            # hit 8 distinct banks per column instead of one (8-way conflicts at a 64-float stride)
            t_s = T.alloc_shared((BT, BT + ROW_PAD), accum)  # I + L in [:, :BT]
            inv_s = T.alloc_shared((BT, BT + ROW_PAD), accum)  # (I + L)^-1, built in place
            kk = T.alloc_fragment((BT, BT), accum)
            acc16 = T.alloc_fragment((2, 16, 16), accum)
            tmp16_s = T.alloc_shared((2, 16, 16), accum)
            acc32 = T.alloc_fragment((32, 32), accum)
            tmp32_s = T.alloc_shared((32, 32), accum)
            col = T.alloc_local((16,), accum)  # one column of a diagonal block's inverse

            # ---- loads, zero-filled past the chunk's valid rows
            for r, c in T.Parallel(BT, K):
                k_s[r, c] = T.if_then_else(r < n_valid, k[t0 + r, hq, c], T.cast(0, dtype))
            for r in T.Parallel(BT):
                g_s[r] = T.if_then_else(r < n_valid, g[t0 + r, hv], 0.0)
                b_s[r] = T.if_then_else(r < n_valid, beta[t0 + r, hv], 0.0)
            T.cumsum(g_s, dim=0)

            # ---- T = I + strictLower(diag(beta) K K^T)
            T.gemm(k_s, k_s, kk, transpose_B=True, clear_accum=True)
            # formed in registers, then one copy (pairs of columns per store); written element by element from
            # the loop, each 4-byte store was its own instruction next to the identity's
            for r, c in T.Parallel(BT, BT):
                beta_r = b_s[r]  # let-bound: outside the select's branches, one load per row (see Pg below)
                kk[r, c] = T.if_then_else(r > c, beta_r * kk[r, c], T.if_then_else(r == c, 1.0, 0.0))
            T.copy(kk, t_s[:, 0:BT])
            # the inverse's strictly upper 16-blocks are zeros; its diagonal blocks and everything below them are
            # written whole by the solve and the merges (no identity to lay down first)
            for r, c in T.Parallel(32, 32):
                inv_s[r, 32 + c] = 0.0
            for p, r, c in T.Parallel(2, 16, 16):
                inv_s[32 * p + r, 32 * p + 16 + c] = 0.0

            # ---- diagonal 16x16 blocks: thread 16 b + c solves T_bb x = e_c row by row, in registers
            # (the same operations in the same order as in shared memory, without its round trips)
            tx = T.get_thread_binding()
            if tx < 64:
                for m in T.unroll(16):
                    col[m] = T.if_then_else(m == tx % 16, 1.0, 0.0)
                for m in T.unroll(1, 16):
                    for j in T.unroll(m):
                        col[m] -= t_s[16 * (tx // 16) + m, 16 * (tx // 16) + j] * col[j]
                for m in T.unroll(16):
                    inv_s[16 * (tx // 16) + m, tx] = col[m]

            # ---- level 1: X = -D_hi T_lo D_lo for the 16-blocks (1,0) and (3,2)
            T.clear(acc16)
            for j in T.unroll(16):
                for p, r, c in T.Parallel(2, 16, 16):
                    acc16[p, r, c] += t_s[32 * p + 16 + r, 32 * p + j] * inv_s[32 * p + j, 32 * p + c]
            T.copy(acc16, tmp16_s)
            T.clear(acc16)
            for j in T.unroll(16):
                for p, r, c in T.Parallel(2, 16, 16):
                    acc16[p, r, c] -= inv_s[32 * p + 16 + r, 32 * p + 16 + j] * tmp16_s[p, j, c]
            for p, r, c in T.Parallel(2, 16, 16):
                inv_s[32 * p + 16 + r, 32 * p + c] = acc16[p, r, c]

            # ---- level 2: X = -D_hi T_lo D_lo for the 32-block (1,0)
            # unrolled, so that the shared loads of later steps are issued ahead of the FMAs
            T.clear(acc32)
            for j in T.unroll(32):
                for r, c in T.Parallel(32, 32):
                    acc32[r, c] += t_s[32 + r, j] * inv_s[j, c]
            T.copy(acc32, tmp32_s)
            T.clear(acc32)
            for j in T.unroll(32):
                for r, c in T.Parallel(32, 32):
                    acc32[r, c] -= inv_s[32 + r, 32 + j] * tmp32_s[j, c]
            for r, c in T.Parallel(32, 32):
                inv_s[32 + r, c] = acc32[r, c]

            # ---- Z = Pg Ag (kk is free again: it held K K^T); rows past the chunk are zero (Q is).
            # Q is loaded only now, so that its buffer can share the memory of T and the merge scratch
            for r, c in T.Parallel(BT, K):
                q_s[r, c] = T.if_then_else(r < n_valid, q[t0 + r, hq, c], T.cast(0, dtype))
            T.gemm(q_s, k_s, kk, transpose_B=True, clear_accum=True)  # P = Q K^T
            # Pg, then Ag, formed in kk and copied out whole (stmatrix): formed in the loop that wrote them to
            # shared memory, each bf16 was a 2-byte store of its own (a quarter of the kernel's time on the
            # H200, Nsight Compute). Gamma_rc is evaluated once per matrix; Pg is written after Q's last read,
            # so that Q's buffer can share memory with both. The shared loads are let-bound before the select:
            # inside it they were branches of their own that nvcc did not merge across the unrolled elements
            # (2 to 4 loads per element; docs/fwd_profile.md, last section)
            for r, c in T.Parallel(BT, BT):
                # unclamped, as the reference: for r < c (an exp of a positive argument, possibly inf) the select
                # discards it; clamping the argument at 0 changed Gamma for r >= c when g > 0 (outside g's
                # documented range, but not rejected)
                gamma = T.exp2((g_s[r] - g_s[c]) * LOG2E)
                kk[r, c] = T.if_then_else(r >= c, scale * gamma * kk[r, c], 0.0)
            T.copy(kk, pg_s)
            for r, c in T.Parallel(BT, BT):
                gamma = T.exp2((g_s[r] - g_s[c]) * LOG2E)
                a_beta = inv_s[r, c] * b_s[c]  # the upper triangle of inv_s holds zeros
                kk[r, c] = T.if_then_else(r >= c, gamma * a_beta, 0.0)
            T.copy(kk, ag_s)
            T.gemm(pg_s, ag_s, kk, clear_accum=True)
            # Z through Pg's buffer (its last read was that GEMM): stored in row pieces, not in the accumulator
            # layout's 4-byte pairs of 8 rows per warp store
            T.copy(kk, pg_s)
            # A likewise, through Ag's buffer (also last read by that GEMM), in the q dtype: the same rounding as a
            # cast at the store, and its store becomes 16-byte row pieces instead of 8-byte ones from fp32 rows
            for r, c in T.Parallel(BT, BT):
                kk[r, c] = inv_s[r, c]
            T.copy(kk, ag_s)

            # ---- masked stores: the chunk's rows, or zeros over a piece of the padding tail (one condition per
            # store, see store_chunk_rows)
            store_chunk_rows(ag_s, A, t0, hv, n_valid, n_store, BT, BT, dtype)
            store_chunk_rows(pg_s, z, t0, hv, n_valid, n_store, BT, BT, dtype)
            for r in T.Parallel(BT):
                if r < n_store:
                    g_cumsum[t0 + r, hv] = T.if_then_else(r < n_valid, g_s[r], 0.0)

    return gdn_chunk_prep
