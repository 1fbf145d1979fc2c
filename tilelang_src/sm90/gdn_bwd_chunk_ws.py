"""Per-chunk gradients of the GDN backward (SM90), warp specialized: the same work and outputs as
gdn_bwd_chunk.py (its docstring has the math), one CTA per (chunk slot, qk-head) walking the group's
v-heads, with the GEMMs no longer split over both warpgroups behind block barriers but split by chain:

  WA (warpgroup 0, holds dQ): P = Q K^T, Pg, Ag -> (W) Vd = Ag W -> dPg = dO Vd^T, E's first
      part, dP -> dQ += dP K -> dQ's state part dO S0^T -> (dVd) dAb = Gamma * (dVd W^T), E, dA, dbeta's
      first part -> dL = strictLower(-A^T dA A^T), K K^T, dbeta's second part, dKs = dKK + dKK^T
      -> the v-head's dg and dbeta.
  WK (warpgroup 1, holds dK): U = K S0, W = V - gamma U -> K dS1 -> (Pg) dVd = r * (K dS1) + Pg^T dO
      -> <S0, dS1> -> (Ag) dv = Ag^T dVd, dVg = -gamma * dv in registers -> dK += dVg S0^T (dVg the
      register operand) -> (Vd) dK_r -> (dP) dK += dP^T Q -> dv stored through dVd's buffer -> (dKs)
      dK += dKs K.
  WP (warpgroup 2): one warp per input: S0 and dS1 by TMA; V, dO; A, g and beta (two stages); Q and K
      once. Full chunks by TMA, partial ones by element copies zero-filled past the sequence end. The test
      for a full chunk must not be `n_valid == BT` (see `full` below): so written, nvcc 13.0 turned it in
      one warp into a predicate of the min/max that forms n_valid and sent partial chunks down the TMA
      path, which read the next sequence's rows (the NaN leak of gdn_bwd_chunk.py's former TMA loads).

WA's products that WK waits for come first (Pg, Ag, Vd, dP), its dQ-only products after them. A first
order (dQ's state part before U and Vd, dv staged through dO's buffer after WA's last dO read) ran
1.18-1.33x slower than gdn_bwd_chunk.py on the H200 (ablate.py; 1446 against 1146 us at (16, 64) 8192
tokens): each v-head waited on that chain of hand-offs.

Each GEMM is one warpgroup's 64-row wgmma over the whole N, so the row sums of a C x V fragment stay
inside a quad (no cross-warpgroup reduction, no block barrier). Every hand-off between the warpgroups is
an mbarrier completing one phase per v-head (parity jv % 2); a buffer's next writer waits on its
readers' barrier of the previous v-head (parity (jv + 1) % 2, which a fresh barrier passes at jv = 0).

Shared memory is single-buffered but for A, g and beta (two stages), as in gdn_bwd_chunk.py; buffers are
reused by hand where shape and dtype match: V's holds W, dVd's holds dv (WK, after WA's dAb), Pg's holds
dA (after WK's dVd), Ag's holds A^T dA (after WK's dv), dP's holds dKs (after WK's dP^T Q).

U and W are WK's (`u_in_wk`, the default): in WA they were 4 of its 22 GEMM units per v-head (64 x 64 x 64
each) against WK's 20, and WA's chain sets the period; WK hands W to WA on `bar_w`. `u_in_wk=False` is the
former split (H200_bwdc_ws.md, twelfth session).
"""

import tilelang.language as T

from common.chunk_gates import col_sums, form_gamma, gate_a, gate_e, lower_dl, scale_gamma
from common.chunk_load import load_tile
from common.chunk_sums import add_state_part, add_whole_chunk_terms, fold_state_row_sums, gemm_state_sums
from common.chunk_store import store_chunk_rows
from common.grid_dependency import grid_dependency
from common.seq_index import chunk_of_slot, chunk_rows

LOG2E = 1.4426950408889634


def gdn_bwd_chunk_ws_sm90(
    # task config
    dtype: str = "bfloat16",
    K: int = 128,
    V: int = 128,
    # kernel config
    BT: int = 64,
    regs: tuple = (256, 224, 24),  # set_max_nreg of WA, WK, WP
    tma_inputs: bool = True,  # V, dO and A of a full chunk by TMA (else element copies in every chunk)
    qk_tma: bool = True,  # Q and K of a full chunk by TMA (S0 and dS1 always are)
    hold_gamma: bool = True,  # WA forms Gamma once per v-head and holds it (32 registers) instead of four times
    u_in_wk: bool = True,  # U = K S0 and W = V - gamma U formed by WK (first in its step) and handed to WA
    vd_halves: bool = True,  # WA forms Vd = Ag W in two 64-column halves (a 32-register accumulator at its peak)
    dg_warp_sum: bool = True,  # the whole-chunk terms of dg summed by WA's first warp (else one thread's chain)
    frag_stores: bool = True,  # dA and dKs formed in fragments and stored by stmatrix (else element stores)
    hs_fold: bool = True,  # <S0, dS1>'s four row quarters added elementwise before one row reduction (32 sums)
    wa_async: bool = False,  # WA issues Q K^T before forming Gamma, and dP K with dO S0^T, each pair under one wait
    lean_waits: bool = False,  # drop WA's waits on vd_read and bar_kg, which its wait on dp_read implies
    dkk_in_wk: bool = False,  # WA hands dL to WK, which forms dKK K and dKK^T K and dbeta's second part (no K K^T)
    # dv of a full chunk stored by TMA from dVd's buffer (waited for before WK writes the next dVd there) instead of
    # WK's 16-byte element stores beside its shared-memory work (docs/fwd_profile.md's rule). H200 (ablate.py, 8192
    # tokens, every output bitwise equal): 125.8 -> 125.0 us at (2, 8), 429.6 -> 433.4 at (16, 32), 706.5 -> 709.7 at
    # (16, 64): no gain, off
    tma_dv: bool = False,
    # dL's second product (A^T dA) A^T with A^T dA as the register operand (an RS wgmma) instead of through Ag's
    # buffer: WA no longer waits there for WK's read of Ag (that wait moves to WA's next write of Ag, a v-head later)
    # and skips a shared-memory store and its fence. H200 (ablate.py, every output bitwise equal;
    # benchmarks/results/H200_prep_zld.md): 716.8 -> 681.2 us at (16, 64), 433.8 -> 416.3 at (16, 32), 132.4 -> 128.6
    # at (2, 8). On in variants.py for the sm90 family
    dl_rs: bool = False,
    # the warpgroups' join (`fin`) before the dq and dk stores. Without it each stores as soon as its own loop ends:
    # WA's dq copy into Q's buffer already follows WK's last read of it (dK += dP^T Q, before WK's dp_read arrive,
    # which WA waits for ahead of the last dKs), and WK's dk copy into K's buffer follows WA's last read of K (K K^T
    # or dQ += dP K, before WA's bar_dks arrive, which WK waits for ahead of dKs K). So WA's dq store runs under WK's
    # last products and WK no longer waits for WA's dg sums. The stores were 50 of 279 us at (16, 16) (ablate.py spec
    # bwdcwsab, benchmarks/results/H200_prep_inverse.md). scripts/barrier_protocol_sim.py finds no race or hang
    # without it; nvcc 13.0: 168 registers, spill stores 832 -> 864 bytes. H200 (ablate.py spec bwdcwsnj, 8192 tokens,
    # every output bitwise equal): 121.8 -> 120.8 us at (2, 8), 263.5 -> 268.6 at (16, 16), 498.8 -> 494.7 at (32, 32),
    # 678.1 -> 693.3 at (16, 64) (benchmarks/results/H200_prep_inverse.md, twenty-first session): the join kept
    join: bool = True,
    # dq and dk of a full chunk stored by TMA from Q's and K's buffers (waited for until read, before the CTA's shared
    # memory goes) instead of 16-byte element stores. At one v-head per group the CTA's fixed work is about 7 of its
    # 16 SM-us per (chunk, v-head) (the twenty-second session's profile against a group of three), and skipping the dq
    # and dk stores saved 50 of 279 us at (16, 16) (spec bwdcwsab): there the stores end every CTA, exposed. H200
    # (ablate.py spec bwdcwsqk, 16384 tokens, every output bitwise equal; benchmarks/results/H200_bwdc_prio.md):
    # 1.02-1.04x the time at one to four v-heads per group (the CTA waits for the stores before its shared memory
    # goes): off
    tma_dqdk: bool = False,
    # the loads of dS1 and dO (needed after the first products) issued once Q and K have arrived, so that Q, K, S0, V
    # and A, g, beta (the first products' operands) do not share the CTA's first memory burst with them. Bites on each
    # CTA's first v-head (later ones wait on a completed phase); at one v-head per group every CTA is its first. H200
    # (ablate.py spec bwdcwspl, 16384 tokens, every output bitwise equal; benchmarks/results/H200_bwdc_prio.md): 0.907x
    # the time at (16, 16), 0.891x at (32, 32), 1.014x at (16, 32), 1.000x at (8, 24), 0.983-0.989x at (16, 64). On in
    # variants.py's variant for one v-head per group (gmax 1)
    prio_loads: bool = False,
    # V's load also issued once Q and K have arrived (with prio_loads the first burst is then Q, K, S0 and A, g, beta:
    # the operands of WA's Q K^T and Ag and WK's K S0). H200 (spec bwdcwsplv, with prio_loads): 0.941x at (16, 16),
    # 0.944x at (32, 32) (prio_loads alone 0.907x, 0.891x), 0.989-0.999x at two to four v-heads: off
    prio_v: bool = False,
    # each later load issued once the one its consumer needs before it has arrived: dS1 after S0 (WK: K S0, then
    # K dS1), dO after V (WK: W = V - gamma U, then Pg^T dO). H200 (spec bwdcwsplc, with prio_loads): as prio_loads
    # alone at one v-head per group, 1.01-1.03x at two to four: off
    chain_loads: bool = False,
    # dVd = r * (K dS1) + Pg^T dO read from dv's rows (where the state-gradient pass, which forms dVd for its own
    # recurrence, would leave it; the kernel overwrites it with dv) instead of formed by WK: WK skips K dS1 and
    # Pg^T dO (6 of its 24 GEMM units per v-head) and WA's dAb waits on a load instead of WK's chain. An experiment
    # (ablate spec bwdcwsdi, which fills dv with dVd first; the state-gradient pass does not write it). H200
    # (benchmarks/results/H200_bwdc_prio.md, twenty-fourth session, 16384 tokens): 1.025-1.058x the default's time at
    # six head configurations, 0.99-1.03x with prio_loads (prio_loads alone 0.89-1.02x): WA's chain sets the period
    # and the extra load on it costs more than WK's GEMMs beside it: off
    dvd_in: bool = False,
    # dq stored by WA straight from its accumulator as soon as it is final (after the group's last v-head's state
    # part, before dAb) instead of through Q's buffer after the loop: the store leaves the CTA's end (at one v-head
    # per group the dq and dk stores end every CTA, exposed) for WA's middle, where it waits on WK's dVd; the price is
    # the accumulator's 4-byte pair stores (about 30 instructions each, common/chunk_store.py). H200 (ablate spec
    # bwdcwspldq, outputs bitwise equal; H200_bwdc_prio.md, twenty-fourth session): 1.24-1.51x prio_loads' time: off
    dq_early: bool = False,
    # WK's <S0, dS1> by two tensor-core products whose diagonal holds BT partial sums (common/chunk_sums.py
    # gemm_state_sums; the fused backward's hs_gemm) instead of the elementwise products over 64 KB of shared memory
    hs_gemm: bool = False,
    # floats of padding per row of the fp32 C x C matrix sq_s: its writes from wgmma fragments (8-byte stores, a
    # half-warp covering 4 rows x 8 columns) and gate_e's reads in the fragment layout are conflict-free at a row
    # stride of 8 mod 32 words (row_pad 8), 2-way at 4; col_sums' column walks are conflict-free at either
    row_pad: int = 4,
    # programmatic dependent launch (common/grid_dependency.py): the kernel may start while the one before it on
    # the stream finishes; every global access waits for that one's completion
    pdl: bool = False,
):
    # the CTA's register pool is what it was launched with, 168 per thread at 384 threads (launch bounds), not the
    # SM's 65536: setmaxnreg.inc waits for registers that another warpgroup's dec released, so a split summing
    # over 3 x 168 = 504 waits forever (a first version with 240 + 232 + 40 hung on the H200)
    assert sum(regs) <= 504 and all(r % 8 == 0 for r in regs)
    assert not (dvd_in and tma_dv), "dvd_in frees dVd's buffer for the next load after dv's element stores"
    # lean_waits (scripts/barrier_protocol_sim.py finds both waits redundant): WK arrives on dp_read after its
    # read of Vd and after writing gu, ka and hs, and WA waits on dp_read (before writing dKs) ahead of both
    # the dg sums and the next v-head's Vd, so that wait covers vd_read and bar_kg (under u_in_wk also WA's wait
    # on bar_w of the next v-head, which WK arrives after its Vd read)
    assert K == 2 * BT or not hs_gemm, "hs_gemm's products take S0 and dS1 in two blocks of BT rows"
    n_hs = BT if hs_gemm else (K // 4 if hs_fold else K)  # the entries of hs_s that WK writes and the dg sum reads
    num_tokens = T.dynamic("num_tokens")
    H = T.dynamic("num_qk_heads")
    HV = T.dynamic("num_v_heads")
    N1 = T.dynamic("num_seqs_plus_one")
    NH = T.dynamic("num_h_slots")
    accum = "float32"

    @T.macro
    def store_group_sum(src, dst, t0, hq, n_valid, n_store, full):
        """dst[t0 + r, hq, :] <- src[r, :] (dq or dk, staged in Q's or K's buffer) for the chunk's rows: with tma_dqdk
        one TMA store for a full chunk, waited for until it has read the buffer (the CTA's last work), else 16-byte
        element stores"""
        if tma_dqdk:
            T.fence_proxy_async()  # every writer's, ahead of the barrier TileLang puts before the store (store_dv)
            if full:
                T.tma_copy(src, dst[t0:t0 + BT, hq, 0:K])
                T.tma_store_wait()
            else:
                store_chunk_rows(src, dst, t0, hq, n_valid, n_store, BT, K, dtype)
        else:
            store_chunk_rows(src, dst, t0, hq, n_valid, n_store, BT, K, dtype)

    @T.macro
    def store_dv(src, dst, t0, hv, n_valid, n_store, full):
        """dst[t0 + r, hv, :] <- src[r, :] for the chunk's rows (zeros over a padding-tail slot's): with tma_dv one
        TMA store for a full chunk (not waited for here), else 16-byte element stores"""
        if tma_dv:
            # every writer's fence before the barrier TileLang puts ahead of the store (a fence inside `if full` came
            # after that barrier: the elected thread could issue the TMA before the other threads' fences)
            T.fence_proxy_async()
            if full:
                T.tma_copy(src, dst[t0:t0 + BT, hv, 0:V])
            else:
                store_chunk_rows(src, dst, t0, hv, n_valid, n_store, BT, V, dtype)
        else:
            store_chunk_rows(src, dst, t0, hv, n_valid, n_store, BT, V, dtype)

    @T.prim_func
    def gdn_bwd_chunk_ws(
        q: T.Tensor((num_tokens, H, K), dtype),
        k: T.Tensor((num_tokens, H, K), dtype),
        v: T.Tensor((num_tokens, HV, V), dtype),
        d_o: T.Tensor((num_tokens, HV, V), dtype),
        A: T.Tensor((num_tokens, HV, BT), dtype),
        g_cumsum: T.Tensor((num_tokens, HV), accum),
        beta: T.Tensor((num_tokens, HV), accum),
        cu_seqlens: T.Tensor((N1,), "int32"),
        h: T.Tensor((NH, HV, K, V), dtype),
        dh: T.Tensor((NH, HV, K, V), dtype),
        dq: T.Tensor((num_tokens, H, K), dtype),  # summed over the group of v-heads
        dk: T.Tensor((num_tokens, H, K), dtype),  # summed over the group of v-heads
        dv: T.Tensor((num_tokens, HV, V), dtype),
        dg: T.Tensor((num_tokens, HV), accum),
        dbeta: T.Tensor((num_tokens, HV), accum),
        scale: T.float32,
        group: T.int32,  # HV / H, from the launcher: head indices are products, never divisions
    ):
        with T.Kernel(NH, H, threads=384) as (slot, hq):
            grid_dependency(pdl)
            num_seqs = N1 - 1
            seq = T.alloc_var("int32", init=0)
            hi = T.alloc_var("int32", init=0)
            seq_end = T.alloc_var("int32", init=0)
            t0 = chunk_of_slot(cu_seqlens, num_seqs, num_tokens, slot, BT, seq, hi, seq_end)
            n_valid, n_tail = chunk_rows(t0, seq, seq_end, num_seqs, num_tokens, BT)
            n_store = T.max(n_valid, n_tail)
            last = T.max(n_valid - 1, 0)
            # a full chunk, tested on the unclamped difference (common/chunk_load.py: `n_valid == BT` sent the A
            # warp down its TMA path in partial chunks, an nvcc 13.0 miscompile)
            full = seq_end - t0 >= BT

            # inputs (WP)
            q_s = T.alloc_shared((BT, K), dtype)
            k_s = T.alloc_shared((BT, K), dtype)
            h_s = T.alloc_shared((K, V), dtype)  # S~0
            dh_s = T.alloc_shared((K, V), dtype)  # dS~1
            w_s = T.alloc_shared((BT, V), dtype)  # V, then W (WA)
            do_s = T.alloc_shared((BT, V), dtype)  # dO
            a_s = T.alloc_shared((2, BT, BT), dtype)
            g_s = T.alloc_shared((2, BT), accum)
            b_s = T.alloc_shared((2, BT), accum)
            # hand-offs
            pg_s = T.alloc_shared((BT, BT), dtype)  # Pg (WA -> WK), then A^T dA (WA)
            ag_s = T.alloc_shared((BT, BT), dtype)  # Ag (WA -> WK), then dA (WA)
            dp_s = T.alloc_shared((BT, BT), dtype)  # dP, then dKs = dKK + dKK^T (WA -> WK)
            vd_s = T.alloc_shared((BT, V), dtype)  # Vd (WA -> WK)
            dvd_s = T.alloc_shared((BT, V), dtype)  # dVd (WK -> WA)
            sq_s = T.alloc_shared((BT, BT + row_pad), accum)  # E's first part, E, dAb * A, dKK (WA)
            # per-row vectors: WA's, WK's, and WK -> WA (two stages by v-head parity)
            gam_a = T.alloc_shared((BT,), accum)
            gam_k = T.alloc_shared((BT,), accum)
            rr_k = T.alloc_shared((BT,), accum)
            gq_s = T.alloc_shared((BT,), accum)  # sum_k Q * dQ_state
            er_s = T.alloc_shared((BT,), accum)  # sum_j E_ij
            ec_s = T.alloc_shared((BT,), accum)  # sum_j E_ji
            db1_s = T.alloc_shared((BT,), accum)  # sum_i dAb_ij A_ij
            db2_s = T.alloc_shared((BT,), accum)  # sum_j dL_ij (K K^T)_ij (WA; WK's with dkk_in_wk)
            dgc_s = T.alloc_shared((BT,), accum)
            gu_s = T.alloc_shared((2, BT), accum)  # sum_k K * (dVg S0^T)   (WK)
            ka_s = T.alloc_shared((2, BT), accum)  # sum_k K * dK_r         (WK)
            hs_s = T.alloc_shared((2, K), accum)  # row sums of S0 * dS1   (WK; the first n_hs hold them all)
            if dkk_in_wk:
                bk_s = T.alloc_shared((BT,), accum)  # beta, WK's copy (its ab_free arrive comes early)

            # WA's fragments
            pa = T.alloc_fragment((BT, BT), accum)  # scale * Gamma * P (held until E's first part), E, dL * K K^T
            gm = T.alloc_fragment((BT, BT), accum)  # Gamma (hold_gamma)
            ma = T.alloc_fragment((BT, BT), accum)  # Ag, dPg, dAb, A^T dA, dL
            acc_a = T.alloc_fragment((BT, V), accum)
            acc_h = T.alloc_fragment((BT, V // 2), accum)  # Vd's halves (vd_halves)
            dqf = T.alloc_fragment((BT, K), accum)
            rows_a = T.alloc_fragment((BT,), accum)
            rows_ac = T.alloc_fragment((BT,), accum)
            # WK's fragments
            acc_k = T.alloc_fragment((BT, V), accum)
            dv_r = T.alloc_fragment((BT, V), dtype)  # dv, held until dVd's buffer is free
            dvg_r = T.alloc_fragment((BT, V), dtype)  # dVg, the register operand of dVg S0^T
            if dkk_in_wk:
                dkt_r = T.alloc_fragment((BT, BT), dtype)  # dKK^T = (diag(beta) dL)^T, the register operand
            if dl_rs:
                ada_r = T.alloc_fragment((BT, BT), dtype)  # A^T dA, the register operand of (A^T dA) A^T
            dkf = T.alloc_fragment((BT, K), accum)
            rows_k = T.alloc_fragment((BT,), accum)
            hprod = T.alloc_fragment((K // 4, V), accum)
            hsum = T.alloc_fragment((K // 4,), accum)
            hd = T.alloc_fragment((BT, BT), accum)  # S0 dS1^T blocks (hs_gemm)
            dgl = T.alloc_var(accum)
            cs = T.alloc_local((8,), accum)  # partial column sums (col_sums)

            # WP -> consumers (one phase per v-head; bar_ab per stage; bar_qk once)
            bar_qk = T.alloc_barrier(32)  # Q and K (the first producer warp)
            bar_h = T.alloc_barrier(32)
            bar_dh = T.alloc_barrier(32)
            bar_v = T.alloc_barrier(32)
            bar_do = T.alloc_barrier(32)
            bar_ab = T.alloc_barrier([32, 32])
            # consumers -> WP
            h_free = T.alloc_barrier(256)  # S0 read (WA, WK)
            dh_free = T.alloc_barrier(128)  # dS1 read (WK)
            v_free = T.alloc_barrier(128)  # W read (WA)
            do_free = T.alloc_barrier(256)  # dO read (WA, WK)
            ab_free = T.alloc_barrier([256, 256])  # A, g, beta of a stage read (WA, WK)
            # WA -> WK
            bar_pg = T.alloc_barrier(128)
            bar_ag = T.alloc_barrier(128)
            bar_vd = T.alloc_barrier(128)
            bar_dp = T.alloc_barrier(128)
            bar_dks = T.alloc_barrier(128)
            dvd_read = T.alloc_barrier(128)  # WA's dVd read (WK may write dv there, then the next dVd)
            # WK -> WA
            bar_dvd = T.alloc_barrier(128)
            bar_w = T.alloc_barrier(128)  # W written into V's buffer (u_in_wk)
            bar_kg = T.alloc_barrier(128)  # gu, ka, hs of the v-head written
            ag_read = T.alloc_barrier(128)  # Ag read (WA may write dA)
            vd_read = T.alloc_barrier(128)  # Vd read (WA may write the next Vd)
            dp_read = T.alloc_barrier(128)  # dP read (WA may write dKs)
            dks_read = T.alloc_barrier(128)  # dKs read (WA may write the next dP)
            fin = T.alloc_barrier(256)  # both warpgroups done with Q and K (dq, dk staged there)
            if dvd_in:
                bar_dvl = T.alloc_barrier(32)  # dVd loaded into dVd's buffer (the dO warp)
                dvd_free = T.alloc_barrier(128)  # dv stored from dVd's buffer (WK): the next dVd may load

            tx = T.get_thread_binding()

            if tx < 128:
                # ================= WA: Pg, Ag, W, Vd, dP, dQ, E, dA, dL, dKs, dg, dbeta
                T.set_max_nreg(regs[0], 1)
                T.clear(dqf)
                T.barrier_wait(bar_qk[0], 0)
                for jv in T.serial(group):
                    hv = hq * group + jv
                    st = jv % 2
                    ph = jv % 2
                    T.barrier_wait(bar_ab[st], (jv // 2) % 2)
                    for r in T.Parallel(BT):
                        gam_a[r] = T.exp2(g_s[st, r] * LOG2E)
                    # ---- P, Pg (held in pa until E's first part), Ag
                    if wa_async and hold_gamma:
                        # Gamma formed while the tensor cores take Q K^T
                        T.wgmma_gemm(q_s, k_s, pa, transpose_B=True, clear_accum=True)
                        form_gamma(gm, g_s, st, BT)
                        T.wait_wgmma(0)
                        # the accumulator's reads stay after the wait (nvcc may not move them above it)
                        T.warpgroup_fence_operand(pa, num_regs=BT * BT // 128)
                    else:
                        T.gemm(q_s, k_s, pa, transpose_B=True, clear_accum=True)
                    if hold_gamma and not wa_async:
                        form_gamma(gm, g_s, st, BT)
                    scale_gamma(pa, gm, g_s, st, scale, hold_gamma, BT)
                    T.copy(pa, pg_s)
                    T.fence_proxy_async()
                    T.barrier_arrive(bar_pg[0])
                    gate_a(ma, gm, g_s, a_s, b_s, st, hold_gamma, BT)
                    if dl_rs:  # WK has read the previous v-head's Ag (without dl_rs WA waited for that before dL;
                        # WA's wait on dp_read implies it too, scripts/barrier_protocol_sim.py: kept explicit)
                        T.barrier_wait(ag_read[0], (jv + 1) % 2)
                    T.copy(ma, ag_s)
                    T.fence_proxy_async()
                    T.barrier_arrive(bar_ag[0])

                    # ---- U = K S0, W = V - gamma * U into V's buffer (here, or by WK with u_in_wk); Vd = Ag W
                    # (WK's dK_r waits for it)
                    if u_in_wk:
                        T.barrier_wait(bar_w[0], ph)
                    else:
                        T.barrier_wait(bar_h[0], ph)
                        T.gemm(k_s, h_s, acc_a, clear_accum=True)
                        T.barrier_wait(bar_v[0], ph)
                        for r, c in T.Parallel(BT, V):
                            acc_a[r, c] = w_s[r, c] - gam_a[r] * acc_a[r, c]
                        T.copy(acc_a, w_s)
                    if vd_halves:
                        T.gemm(ag_s, w_s[:, 0:V // 2], acc_h, clear_accum=True)
                        if not lean_waits:
                            T.barrier_wait(vd_read[0], (jv + 1) % 2)
                        T.copy(acc_h, vd_s[:, 0:V // 2])
                        T.gemm(ag_s, w_s[:, V // 2:V], acc_h, clear_accum=True)
                        T.copy(acc_h, vd_s[:, V // 2:V])
                    else:
                        T.gemm(ag_s, w_s, acc_a, clear_accum=True)
                        if not lean_waits:
                            T.barrier_wait(vd_read[0], (jv + 1) % 2)
                        T.copy(acc_a, vd_s)
                    T.fence_proxy_async()
                    T.barrier_arrive(bar_vd[0])

                    # ---- dPg = dO Vd^T: E's first part Pg * dPg, dP = scale * Gamma * dPg (WK's dP^T Q); dQ += dP K
                    T.barrier_wait(bar_do[0], ph)
                    T.gemm(do_s, vd_s, ma, transpose_B=True, clear_accum=True)
                    for r, c in T.Parallel(BT, BT):
                        pa[r, c] = pa[r, c] * ma[r, c]
                    T.copy(pa, sq_s[:, 0:BT])
                    scale_gamma(ma, gm, g_s, st, scale, hold_gamma, BT)
                    T.barrier_wait(dks_read[0], (jv + 1) % 2)
                    T.copy(ma, dp_s)
                    T.fence_proxy_async()
                    T.barrier_arrive(bar_dp[0])
                    # ---- dQ's state part scale * gamma * (dO S0^T); its row products with Q (a gate). The last
                    # reads of dO and S0 here
                    if wa_async:
                        T.wgmma_gemm(dp_s, k_s, dqf)
                        T.wgmma_gemm(do_s, h_s, acc_a, transpose_B=True, clear_accum=True)
                        T.wait_wgmma(0)
                        T.warpgroup_fence_operand(dqf, num_regs=BT * K // 128)
                        T.warpgroup_fence_operand(acc_a, num_regs=BT * V // 128)
                    else:
                        T.gemm(dp_s, k_s, dqf)
                        T.gemm(do_s, h_s, acc_a, transpose_B=True, clear_accum=True)
                    T.barrier_arrive(h_free[0])
                    T.barrier_arrive(do_free[0])
                    add_state_part(dqf, acc_a, q_s, gam_a, scale, rows_a, BT, K)
                    for r in T.Parallel(BT):
                        gq_s[r] = rows_a[r]
                    if dq_early:
                        if jv == group - 1:  # dQ is final: stored from the accumulator
                            store_chunk_rows(dqf, dq, t0, hq, n_valid, n_store, BT, K, dtype)

                    # ---- dAb = Gamma * (dVd W^T); E = E1 + dAb * A * beta_col; dA = dAb * beta_col into Pg's buffer
                    # (WK's Pg^T dO came before its dVd)
                    if dvd_in:
                        T.barrier_wait(bar_dvl[0], ph)
                    else:
                        T.barrier_wait(bar_dvd[0], ph)
                    T.gemm(dvd_s, w_s, ma, transpose_B=True, clear_accum=True)
                    T.barrier_arrive(dvd_read[0])
                    T.barrier_arrive(v_free[0])
                    gate_e(ma, pa, gm, sq_s, g_s, a_s, b_s, st, hold_gamma, BT)
                    if not frag_stores:
                        for r, c in T.Parallel(BT, BT):
                            pa_c = ma[r, c] * b_s[st, c]
                            pg_s[r, c] = T.cast(pa_c, dtype)
                    # Gamma gate: row sums of E here, its column sums from fp32 shared memory
                    T.reduce_sum(pa, rows_ac, dim=1)
                    for r in T.Parallel(BT):
                        er_s[r] = rows_ac[r]
                    T.copy(pa, sq_s[:, 0:BT])
                    col_sums(sq_s, ec_s, cs, tx, BT)
                    if frag_stores:
                        # dAb * A's column sums from pa (E is summed), then dA = dAb * beta_col in ma, by stmatrix
                        for r, c in T.Parallel(BT, BT):
                            pa[r, c] = ma[r, c] * a_s[st, r, c]
                        T.copy(pa, sq_s[:, 0:BT])
                        col_sums(sq_s, db1_s, cs, tx, BT)
                        for r, c in T.Parallel(BT, BT):
                            ma[r, c] = ma[r, c] * b_s[st, c]
                        T.copy(ma, pg_s)
                    else:
                        for r, c in T.Parallel(BT, BT):
                            ma[r, c] = ma[r, c] * a_s[st, r, c]
                        T.copy(ma, sq_s[:, 0:BT])
                        col_sums(sq_s, db1_s, cs, tx, BT)

                    # ---- dL = strictLower(-A^T dA A^T) (A^T dA in Ag's buffer once WK's dv has read Ag);
                    # dbeta += rowsum(dL * K K^T); dKs = dKK + dKK^T into dP's buffer once WK has read dP (with
                    # dkk_in_wk: dL into dP's buffer, the rest by WK)
                    T.gemm(a_s[st, :, :], pg_s, ma, transpose_A=True, clear_accum=True)
                    if dl_rs:
                        T.copy(ma, ada_r)
                        T.gemm(ada_r, a_s[st, :, :], ma, transpose_B=True, clear_accum=True)
                    else:
                        T.barrier_wait(ag_read[0], ph)
                        T.copy(ma, ag_s)
                        T.gemm(ag_s, a_s[st, :, :], ma, transpose_B=True, clear_accum=True)
                    if dkk_in_wk:
                        # dL itself (bf16) into dP's buffer: WK forms dKK K, dKK^T K and rowsum(dL * K K^T) from it
                        for r, c in T.Parallel(BT, BT):
                            ma[r, c] = T.if_then_else(r > c, -ma[r, c], 0.0)
                        T.barrier_wait(dp_read[0], ph)
                        T.copy(ma, dp_s)
                    else:
                        T.gemm(k_s, k_s, pa, transpose_B=True, clear_accum=True)
                        lower_dl(ma, pa, b_s, st, BT)
                        T.copy(ma, sq_s[:, 0:BT])
                        T.reduce_sum(pa, rows_ac, dim=1)
                        for r in T.Parallel(BT):
                            db2_s[r] = rows_ac[r]
                        T.barrier_wait(dp_read[0], ph)
                        if frag_stores:
                            # the transposed reads of the padded fp32 rows are conflict-free in the fragment's layout
                            for r, c in T.Parallel(BT, BT):
                                ma[r, c] = ma[r, c] + sq_s[c, r]
                            T.copy(ma, dp_s)
                        else:
                            for r, c in T.Parallel(BT, BT):
                                dp_s[r, c] = T.cast(sq_s[r, c] + sq_s[c, r], dtype)
                    T.fence_proxy_async()
                    T.barrier_arrive(bar_dks[0])

                    # ---- the v-head's dg and dbeta (whole-chunk terms on the last real token)
                    if not lean_waits:
                        T.barrier_wait(bar_kg[0], ph)
                    for r in T.Parallel(BT):
                        dgc_s[r] = T.if_then_else(
                            r < n_valid, gu_s[st, r] - ka_s[st, r] + gq_s[r] + er_s[r] - ec_s[r], 0.0)
                    if dg_warp_sum:
                        add_whole_chunk_terms(dgc_s, hs_s, ka_s, st, gam_a[BT - 1], last, tx, dgl, n_hs, BT)
                    elif tx == last:
                        dgl = dgc_s[last]
                        for j in T.serial(n_hs):
                            dgl = dgl + gam_a[BT - 1] * hs_s[st, j]
                        for j in T.serial(BT):
                            dgl = dgl + ka_s[st, j]
                        dgc_s[last] = dgl
                    T.cumsum(dgc_s, dim=0, reverse=True)
                    if dkk_in_wk:  # WK stores dbeta
                        for r in T.Parallel(BT):
                            if r < n_store:
                                dg[t0 + r, hv] = T.if_then_else(r < n_valid, dgc_s[r], 0.0)
                    else:
                        for r in T.Parallel(BT):
                            if r < n_store:
                                dg[t0 + r, hv] = T.if_then_else(r < n_valid, dgc_s[r], 0.0)
                                dbeta[t0 + r, hv] = T.if_then_else(r < n_valid, db1_s[r] + db2_s[r], 0.0)
                    T.barrier_arrive(ab_free[st])

                if join:  # ---- the join with WK
                    T.barrier_arrive(fin[0])
                    T.barrier_wait(fin[0], 0)
                # ---- dq stored through Q's buffer (with dq_early: stored in the loop)
                if not dq_early:
                    T.copy(dqf, q_s)
                    store_group_sum(q_s, dq, t0, hq, n_valid, n_store, full)

            elif tx < 256:
                # ================= WK: dVd, dv, dVg, dK
                T.set_max_nreg(regs[1], 1)
                T.clear(dkf)
                T.barrier_wait(bar_qk[0], 0)
                for jv in T.serial(group):
                    hv = hq * group + jv
                    st = jv % 2
                    ph = jv % 2
                    T.barrier_wait(bar_ab[st], (jv // 2) % 2)
                    for r in T.Parallel(BT):
                        gam_k[r] = T.exp2(g_s[st, r] * LOG2E)
                        rr_k[r] = T.if_then_else(r < n_valid, T.exp2((g_s[st, BT - 1] - g_s[st, r]) * LOG2E), 0.0)
                    if dkk_in_wk:
                        for r in T.Parallel(BT):
                            bk_s[r] = b_s[st, r]
                    T.barrier_arrive(ab_free[st])

                    if u_in_wk:
                        # ---- U = K S0, W = V - gamma * U into V's buffer, for WA's Vd = Ag W
                        T.barrier_wait(bar_h[0], ph)
                        T.gemm(k_s, h_s, acc_k, clear_accum=True)
                        T.barrier_wait(bar_v[0], ph)
                        for r, c in T.Parallel(BT, V):
                            acc_k[r, c] = w_s[r, c] - gam_k[r] * acc_k[r, c]
                        T.copy(acc_k, w_s)
                        T.fence_proxy_async()
                        T.barrier_arrive(bar_w[0])

                    if dvd_in:
                        # ---- dVd loaded (the dO warp); WK reads no dO but still counts in do_free's arrivals
                        T.barrier_arrive(do_free[0])
                        T.barrier_wait(bar_dh[0], ph)
                        T.barrier_wait(bar_dvl[0], ph)
                    else:
                        # ---- dVd = r * (K dS1) + Pg^T dO (WA's dAb waits for it)
                        T.barrier_wait(bar_dh[0], ph)
                        T.gemm(k_s, dh_s, acc_k, clear_accum=True)
                        for r, c in T.Parallel(BT, V):
                            acc_k[r, c] *= rr_k[r]
                        T.barrier_wait(bar_pg[0], ph)
                        T.barrier_wait(bar_do[0], ph)
                        T.gemm(pg_s, do_s, acc_k, transpose_A=True)
                        T.barrier_arrive(do_free[0])
                        T.barrier_wait(dvd_read[0], (jv + 1) % 2)
                        if tma_dv:  # the previous v-head's dv store has read the buffer
                            T.tma_store_wait()
                        T.copy(acc_k, dvd_s)
                        T.fence_proxy_async()
                        T.barrier_arrive(bar_dvd[0])

                    # ---- <S0, dS1>'s row sums (the whole-chunk gate), a quarter of the rows at a time (a loop, not
                    # unrolled: unrolled it was WK's largest stretch of code, ~700 SASS instructions). Only their
                    # total is used: with hs_fold the quarters are added elementwise first and one row reduction
                    # leaves K / 4 partial sums (a quarter of the cross-thread reductions)
                    T.barrier_wait(bar_h[0], ph)
                    if hs_gemm:
                        gemm_state_sums(h_s, dh_s, hd, hs_s, st, BT)
                    elif hs_fold:
                        fold_state_row_sums(h_s, dh_s, hprod, hsum, hs_s, st, K, V)
                    else:
                        for qtr in T.serial(4):
                            for a, b in T.Parallel(K // 4, V):
                                hprod[a, b] = T.cast(h_s[qtr * (K // 4) + a, b], accum) * T.cast(
                                    dh_s[qtr * (K // 4) + a, b], accum)
                            T.reduce_sum(hprod, hsum, dim=1)
                            for a in T.Parallel(K // 4):
                                hs_s[st, qtr * (K // 4) + a] = hsum[a]

                    # ---- dv = Ag^T dVd (kept in q's dtype until dVd's buffer is free); dVg = -gamma * dv as the
                    # register operand of dK += dVg S0^T, whose row products with K are the gate of W
                    T.barrier_wait(bar_ag[0], ph)
                    T.gemm(ag_s, dvd_s, acc_k, transpose_A=True, clear_accum=True)
                    T.barrier_arrive(ag_read[0])
                    for r, c in T.Parallel(BT, V):
                        dv_r[r, c] = T.cast(acc_k[r, c], dtype)
                        dvg_r[r, c] = T.cast(-gam_k[r] * acc_k[r, c], dtype)
                    T.gemm(dvg_r, h_s, acc_k, transpose_B=True, clear_accum=True)
                    T.barrier_arrive(h_free[0])
                    for r, c in T.Parallel(BT, K):
                        dkf[r, c] += acc_k[r, c]
                        acc_k[r, c] = acc_k[r, c] * k_s[r, c]
                    T.reduce_sum(acc_k, rows_k, dim=1)
                    for r in T.Parallel(BT):
                        gu_s[st, r] = rows_k[r]

                    # ---- dK's r part r * (Vd dS1^T); its row products with K (the gate of r)
                    T.barrier_wait(bar_vd[0], ph)
                    T.gemm(vd_s, dh_s, acc_k, transpose_B=True, clear_accum=True)
                    if not lean_waits:
                        T.barrier_arrive(vd_read[0])
                    T.barrier_arrive(dh_free[0])
                    for r, c in T.Parallel(BT, K):
                        acc_k[r, c] *= rr_k[r]
                    for r, c in T.Parallel(BT, K):
                        dkf[r, c] += acc_k[r, c]
                        acc_k[r, c] = acc_k[r, c] * k_s[r, c]
                    T.reduce_sum(acc_k, rows_k, dim=1)
                    for r in T.Parallel(BT):
                        ka_s[st, r] = rows_k[r]
                    if not lean_waits:
                        T.barrier_arrive(bar_kg[0])

                    # ---- dK += dP^T Q
                    T.barrier_wait(bar_dp[0], ph)
                    T.gemm(dp_s, q_s, dkf, transpose_A=True)
                    T.barrier_arrive(dp_read[0])

                    # ---- dv stored through dVd's buffer (WA's dAb has read it)
                    T.barrier_wait(dvd_read[0], ph)
                    T.copy(dv_r, dvd_s)
                    store_dv(dvd_s, dv, t0, hv, n_valid, n_store, full)
                    if dvd_in:  # the element stores have read the buffer
                        T.barrier_arrive(dvd_free[0])

                    # ---- dK += dKs K
                    T.barrier_wait(bar_dks[0], ph)
                    if dkk_in_wk:
                        # dP's buffer holds dL: G = dL K gives dKK K = diag(beta) G and dbeta's second part
                        # rowsum(dL * K K^T) = rowsum(G * K); dKK^T K from (diag(beta) dL)^T formed in registers
                        # (G consumed before the operand is formed: WK's registers hold dK and one of the two)
                        T.gemm(dp_s, k_s, acc_k, clear_accum=True)
                        for r, c in T.Parallel(BT, K):
                            dkf[r, c] += bk_s[r] * acc_k[r, c]
                            acc_k[r, c] = acc_k[r, c] * k_s[r, c]
                        T.reduce_sum(acc_k, rows_k, dim=1)
                        # dbeta's second part through shared memory (a global store straight from the reduced
                        # fragment under the row mask kept TileLang's lowering busy for more than 5 minutes)
                        for r in T.Parallel(BT):
                            db2_s[r] = rows_k[r]
                        for r, c in T.Parallel(BT, BT):
                            dkt_r[r, c] = T.cast(bk_s[c] * T.cast(dp_s[c, r], accum), dtype)
                        T.gemm(dkt_r, k_s, dkf)
                        T.barrier_arrive(dks_read[0])
                        # dbeta = dAb * A's column sums (WA, written before its bar_dks arrive) + rowsum(dL * K K^T)
                        for r in T.Parallel(BT):
                            if r < n_store:
                                dbeta[t0 + r, hv] = T.if_then_else(r < n_valid, db1_s[r] + db2_s[r], 0.0)
                    else:
                        T.gemm(dp_s, k_s, dkf)
                        T.barrier_arrive(dks_read[0])

                if tma_dv:  # the last dv store has read dVd's buffer before the CTA's shared memory goes
                    T.tma_store_wait()
                if join:  # ---- the join with WA
                    T.barrier_arrive(fin[0])
                    T.barrier_wait(fin[0], 0)
                # ---- dk stored through K's buffer
                T.copy(dkf, k_s)
                store_group_sum(k_s, dk, t0, hq, n_valid, n_store, full)

            else:
                # ================= WP: loads, one warp per input
                T.set_max_nreg(regs[2], 0)
                if tx < 256 + 32:
                    # Q and K once, S0 and dS1 per v-head: TMA (Q and K by element copies in a partial chunk). A
                    # producer warp each took four round trips for Q and K by element copies, and the consumers'
                    # first wait (for them) held 4.4% of the kernel's warp samples (Nsight Compute, 9dced96)
                    load_tile(q, q_s, bar_qk, t0, hq, n_valid, full, BT, K, dtype, qk_tma)
                    load_tile(k, k_s, bar_qk, t0, hq, n_valid, full, BT, K, dtype, qk_tma)
                    T.barrier_arrive(bar_qk[0])
                    for jv in T.serial(group):
                        hv = hq * group + jv
                        T.barrier_wait(h_free[0], (jv + 1) % 2)
                        T.tma_copy(h[slot, hv, 0:K, 0:V], h_s, barrier=bar_h[0])
                        T.barrier_arrive(bar_h[0])
                        if prio_loads:  # Q and K arrived (phase 0 completes once: later v-heads pass at once)
                            T.barrier_wait(bar_qk[0], 0)
                        if chain_loads:  # this v-head's S0 arrived (this warp loads the next S0 after dS1)
                            T.barrier_wait(bar_h[0], jv % 2)
                        T.barrier_wait(dh_free[0], (jv + 1) % 2)
                        T.tma_copy(dh[slot, hv, 0:K, 0:V], dh_s, barrier=bar_dh[0])
                        T.barrier_arrive(bar_dh[0])
                elif tx < 256 + 64:
                    # V
                    if prio_v:  # after Q and K
                        T.barrier_wait(bar_qk[0], 0)
                    for jv in T.serial(group):
                        hv = hq * group + jv
                        T.barrier_wait(v_free[0], (jv + 1) % 2)
                        load_tile(v, w_s, bar_v, t0, hv, n_valid, full, BT, V, dtype, tma_inputs)
                        T.barrier_arrive(bar_v[0])
                elif tx < 256 + 96:
                    # dO
                    if prio_loads:  # after Q and K
                        T.barrier_wait(bar_qk[0], 0)
                    for jv in T.serial(group):
                        hv = hq * group + jv
                        T.barrier_wait(do_free[0], (jv + 1) % 2)
                        if chain_loads:  # this v-head's V arrived (V's next load waits for WA's dAb, after dO's)
                            T.barrier_wait(bar_v[0], jv % 2)
                        load_tile(d_o, do_s, bar_do, t0, hv, n_valid, full, BT, V, dtype, tma_inputs)
                        T.barrier_arrive(bar_do[0])
                        if dvd_in:  # dVd from dv's rows once the previous v-head's dv has left the buffer
                            T.barrier_wait(dvd_free[0], (jv + 1) % 2)
                            load_tile(dv, dvd_s, bar_dvl, t0, hv, n_valid, full, BT, V, dtype, tma_inputs)
                            T.barrier_arrive(bar_dvl[0])
                else:
                    # A, g (repeating the last real cumsum), beta (0 past the chunk's end): two stages
                    for jv in T.serial(group):
                        hv = hq * group + jv
                        st = jv % 2
                        T.barrier_wait(ab_free[st], (jv // 2 + 1) % 2)
                        if tma_inputs and full:
                            T.tma_copy(A[t0:t0 + BT, hv, 0:BT], a_s[st, :, :], barrier=bar_ab[st])
                        else:
                            for r, c in T.Parallel(BT, BT):
                                a_s[st, r, c] = T.if_then_else(r < n_valid, A[t0 + r, hv, c], T.cast(0, dtype))
                        for r in T.Parallel(BT):
                            g_s[st, r] = T.if_then_else(
                                n_valid > 0, g_cumsum[T.min(t0 + T.min(r, last), num_tokens - 1), hv], 0.0)
                            b_s[st, r] = T.if_then_else(r < n_valid, beta[T.min(t0 + r, num_tokens - 1), hv], 0.0)
                        T.fence_proxy_async()
                        T.barrier_arrive(bar_ab[st])

    return gdn_bwd_chunk_ws
