"""The GDN backward with the state gradient inside the chunk gradient (SM90, warp specialized): one CTA per
(backward segment, v-head) walks the segment's chunks from last to first with dS = dL/dS_end in fp32 registers,
and forms every gradient of each chunk (dq, dk, dv, dg, dbeta) on the way; at the end it leaves dh0. It does the
work of gdn_bwd_dh.py's main pass and gdn_bwd_chunk_ws.py in one kernel. At one v-head per qk-head its dq and dk are
final; at `group` v-heads per qk-head the group's CTAs of a segment row form a cluster that sums them through
distributed shared memory (`cluster_sum`, below). The plan, its budget and why: docs/fused_bwd_plan.md; the math: the
steps of docs/gdn_chunk_derivation.md, "Backward".

  WA (warpgroup 0, holds dQ): Ag, then (Q, K) P = Q K^T, Pg -> (W) Vd = Ag W -> dPg = dO Vd^T, E's first part, dP
      -> dQ = dP K + scale * gamma * (dO S0^T) and its gate's row sums -> (dVd) dAb = Gamma * (dVd W^T) -> dq staged
      in Q's buffer -> E, dA, dbeta's first part, E's row and column sums (with dl_in_wk=False also dL, K K^T,
      dbeta's second part, dKs).
  WK (warpgroup 1, holds dK): U = K S0, W = V - gamma U -> (dS~) dVd = r * (K dS~) + Pg^T dO -> <S0, dS~> ->
      (Vd) dK = r * (Vd dS~^T) -> (Ag) dv = Ag^T dVd into Vd's buffer -> dK += -gamma * (dv S0^T) -> (dP)
      dK += dP^T Q -> (dA, dl_in_wk) dL, K K^T, dbeta's second part, dKs -> dK += dKs K -> dk staged in dVd's buffer.
  WS (warpgroup 2, holds dS, 128 x 128 fp32): publishes dS~ (bf16) in dS~'s buffer for WK, then
      dS <- gamma_last dS + Q^T (scale * gamma * dO) + K^T dVg (dO scaled in place once WA and WK have read it; dv
      stored, then scaled in place into dVg once WK's dv S0^T has read it); then the chunk's stores: dq, dk, and dg
      and dbeta from WA's and WK's per-row sums.
  WP (warpgroup 3): one warp per input: S0 by TMA, Q (once dq has left its buffer), K (once dKs K has read it); V;
      dO; A, g and beta (two stages). Full chunks by TMA, partial ones by element copies; the V warp of the first
      segment row's CTAs zero-fills the padding tail's gradients.

WA's chain sets the period (a timeline of clock64 stamps at every barrier operation: benchmarks/fused_bwd_check.py
--trace, benchmarks/results/H200_fused_bwd.md); the others take what needs no WA registers. The chain from one
chunk's dS~ to the next is WK's K dS~ and Pg^T dO (dVd), dv = Ag^T dVd, WS's dVg and K^T dVg: well under WA's work.

Every hand-off is an mbarrier completing one phase per chunk (parity i % 2; a buffer's next writer waits on its
readers' barrier of the previous chunk, parity (i + 1) % 2, which a fresh barrier passes at i = 0); A, g, beta and
WK's per-row sums have two stages (parity (i // 2) % 2). Shared memory is gdn_bwd_chunk_ws.py's set (dS~ lives
in dS1's buffer, written by WS instead of loaded; 226.8 KB), so Q and K are single-buffered: the next chunk's K
loads once this chunk's dKs K has read it. The protocol is simulated on the CPU: tests/test_barrier_protocol_fused.py.

Registers: 512 threads launch with 128 each; setmaxnreg moves them (the split must sum to at most 4 x 128).
"""

import tilelang.language as T

from common.chunk_gates import col_sums, form_gamma, gate_a, gate_e, lower_dl, scale_gamma
from common.chunk_load import load_tile
from common.chunk_store import store_chunk_rows
from common.chunk_sums import (add_state_part, add_whole_chunk_terms, fold_state_row_sums, gemm_state_sums,
                               row_products_by_halves)
from common.cluster_sum import CLUSTER_PRELUDE, add_remote_tile, arrive_cluster, cluster_sync, wait_cluster
from common.grid_dependency import grid_dependency
from common.segments import end_state, segment_row, start_state
from common.seq_index import seq_bound

LOG2E = 1.4426950408889634
# the named barrier of WS's threads when they add a cluster's staged parts (TileLang numbers its own from 1 up: 10 in
# this kernel)
BAR_WS_SUM = 13


def gdn_bwd_fused_sm90(
    # task config
    dtype: str = "bfloat16",
    K: int = 128,
    V: int = 128,
    # kernel config
    BT: int = 64,
    # set_max_nreg of WA, WK, WS, WP. nvcc 13.0: 184 / 144 / 160 / 24 spilled 1644 bytes (WK's two 64-register
    # fragments at 144), 168 / 160 / 160 / 24 spills 724; H200 (benchmarks/fused_bwd_check.py, (32, 32) 8192x4):
    # 2651 -> 2257 us
    regs: tuple = (168, 160, 160, 24),
    # WA forms Gamma once per chunk and holds it (32 registers) instead of four times inline (exp2 of two shared
    # loads per element). H200 (benchmarks/fused_bwd_check.py, benchmarks/results/H200_fused_bwd_dl.log), with
    # dl_in_wk: 2117 -> 1633 us at (32, 32) 8192x4, 583 -> 464 at 1024x8, 303 -> 246 at (16, 16) 1024x8
    hold_gamma: bool = True,
    # dL = strictLower(-A^T dA A^T), K K^T, dbeta's second part and dKs formed by WK (from dA in Pg's buffer, after its
    # dP^T Q) instead of by WA, whose chunk then ends with dA: WA's chain sets the period, and WK waited ~8.6k cycles
    # per chunk for WA's dKs (benchmarks/results/H200_fused_bwd_v2_trace.log). Alone (Gamma inline) 2083 -> 2117 us at
    # (32, 32) 8192x4; with hold_gamma the pair measured best (above); hold_gamma alone not yet measured
    dl_in_wk: bool = True,
    # (with dl_in_wk) WA forms E, dA and their sums before it stages dq, whose buffer it may write only after WK's
    # dP^T Q (dp_read); dq waits in a bf16 fragment (32 registers; the same bits). The shipped kernel's timeline
    # (H200, (32, 32) 8192x4, benchmarks/results/H200_fused_bwd_shipped_trace.log; docs/fused_bwd_plan.md, "The
    # period, read again") shows the two consumers waiting on each other: WA ~5.2k cycles per chunk for dp_read (WK's
    # own chain reaches dP^T Q at ~19.8k), then WK ~4.4k for WA's dA (staging dq, E and dA took WA to ~24.8k); the
    # period (25.0k) is that cycle: WK's chain to dP^T Q, WA's dq, E and dA, WK's dL / dKs / dKs K. With dA first,
    # WK's wait goes: ~20.5k (-18%), an estimate (WK may then wait for its next K at the chunk start: K is reloaded
    # only after WK's dKs K). Measured (H200, benchmarks/results/H200_hs_gemm.md): 1.11x the default's time at (32, 32)
    # 8192x4, 0.98x at 1024x8; its timeline: period 26.0k, WK's chain to dP^T Q 18.5k instead of 15.7k (WA's E and dA
    # beside it compete for the SM's issue slots and shared memory): off
    dq_after_da: bool = False,
    # WK's <S0, dS~> (dg's whole-chunk term) by two tensor-core products, S0[:64] dS~[:64]^T + S0[64:] dS~[64:]^T,
    # whose diagonal holds BT partial sums (common/chunk_sums.py gemm_state_sums), instead of the elementwise fold
    # over 64 KB of shared memory (~2.2k cycles on WK's chain before its Vd dS~^T in the twenty-fifth session's
    # timeline; under Nsight Compute the fold was 42M of the kernel's 466M instructions, (32, 32) 1x32768). H200
    # (benchmarks/fused_bwd_check.py, benchmarks/results/H200_hs_gemm.md): 0.978x the fold's time at (32, 32)
    # 8192x4, 0.982x at 1024x8, 0.985x at (16, 16) 1024x8; adding dq_after_da: 1.045x hs_gemm's time at 8192x4
    hs_gemm: bool = True,
    # floats of padding per row of the fp32 C x C matrix sq_s. Its writes from wgmma fragments are 8-byte stores whose
    # half-warps cover 4 rows x 8 columns: conflict-free when the row stride is 8 mod 32 words (row_pad 8); the
    # transposed reads of dKs = dKK + dKK^T (4-byte loads of 8 rows x 4 column pairs) when it is 4 mod 16 (row_pad
    # 4). Per chunk 4 stores and gate_e's fragment-layout load against 1 transposed read; under Nsight Compute
    # (row_pad 4, (32, 32) 1x32768) the stores' 2-way conflicts were 10.5M of 178.9M shared wavefronts
    row_pad: int = 4,
    # dQ's state part, scale * gamma * (dO S0^T), formed first in dQ's own accumulator (its row products with Q summed
    # there, in two BT-column halves through ma), then dP K accumulated onto it: no second BT x K fp32 accumulator in
    # WA (64 registers per thread), whose live fragments at dQ (P, Gamma, dQ and that one: 192 registers) are more
    # than its 168, and S0 and dO released before dP K. nvcc 13.0: WA's main loop reloaded 84 spilled words and
    # stored 39 per chunk (the kernel 744 bytes of spill stores, 1004 of loads), with it none. H100
    # (benchmarks/fused_bwd_check.py, benchmarks/results/s35/README.md), (32, 32): 1690 -> 1612 us at 8192x4, 494 ->
    # 467 at 1024x8; with regs (160, 168, 160, 24) 1586 / 453 (the variants row's)
    dq_fold: bool = False,
    # programmatic dependent launch (common/grid_dependency.py): the kernel may start while the one before it on
    # the stream finishes; every global access waits for that one's completion
    pdl: bool = False,
    # v-heads per qk-head. At more than one, the group's CTAs of a segment row form a thread-block cluster (cluster_sum
    # must be set) and sum dq and dk through distributed shared memory (common/cluster_sum.py): each CTA stages its
    # v-head's part in its own buffer (Q's for dq, dVd's for dk) as at one v-head; rank 0's WS adds the others' staged
    # dq into its own just before it stores the sum, rank group - 1's WS likewise dk (at two v-heads each CTA stores
    # one of them): off WA's and WK's chains, and a sender's buffer is freed (refilled) about where its own WS would
    # have freed it after storing. dg and dbeta stay per v-head (their row products are taken before the sum). The
    # parts are summed in their staged form (bf16 or fp16): one rounding per part and one per sum instead of one in
    # all. docs/fused_bwd_plan.md, "The group sum by a cluster"
    group: int = 1,
    cluster_sum: bool = False,
):
    assert sum(regs) <= 512 and all(r % 8 == 0 for r in regs)
    assert K == V, "dS~ shares the chunk gradient's [K, V] tiles; the transition rows of CP need K == V too"
    assert dl_in_wk or not dq_after_da, "dq_after_da reorders the dl_in_wk hand-off (WA's chunk ends with dA)"
    assert K == 2 * BT or not hs_gemm, "hs_gemm's products take S0 and dS~ in two blocks of BT rows"
    assert K == 2 * BT or not dq_fold, "dq_fold sums dQ's row products with Q in two halves of BT columns"
    assert cluster_sum == (group > 1), "a group of v-heads sums dq and dk over its cluster (cluster_sum), one does not"
    assert not (cluster_sum and dq_after_da), "the cluster hand-off of dq sits in the staging that dq_after_da moves"
    is_bf16 = dtype == "bfloat16"  # else float16 (the cluster sum's adds)
    n_hs = BT if hs_gemm else K // 4  # partial sums of <S0, dS~> that WK writes (the fold: four row quarters first)
    num_tokens = T.dynamic("num_tokens")
    HV = T.dynamic("num_v_heads")  # group * the number of qk-heads
    HQ = T.dynamic("num_qk_heads")
    N1 = T.dynamic("num_seqs_plus_one")
    NS = T.dynamic("num_states")
    NH = T.dynamic("num_h_slots")
    NSEG = T.dynamic("num_segs")
    NROWS = T.dynamic("num_range_rows")
    accum = "float32"

    @T.prim_func
    def gdn_bwd_fused(
        q: T.Tensor((num_tokens, HQ, K), dtype),
        k: T.Tensor((num_tokens, HQ, K), dtype),
        v: T.Tensor((num_tokens, HV, V), dtype),
        d_o: T.Tensor((num_tokens, HV, V), dtype),
        A: T.Tensor((num_tokens, HV, BT), dtype),
        g_cumsum: T.Tensor((num_tokens, HV), accum),
        beta: T.Tensor((num_tokens, HV), accum),
        cu_seqlens: T.Tensor((N1,), "int32"),
        h: T.Tensor((NH, HV, K, V), dtype),  # S~0 of every chunk, by chunk slot (the recompute's)
        dht: T.Tensor((NS, HV, K, V), accum),  # [N, HV, K, V], or [N, HV, V, K] if state_v_first
        seg_seq: T.Tensor((NSEG,), "int32"),  # the sequence of every segment slot (N: padding)
        ranges: T.Tensor((NROWS, HV, 3), "int32"),  # (first chunk, count, flags) per CTA row (reverse tables)
        cp_ds: T.Tensor((NSEG, HV, K, V), accum),  # gradient at the end of every segment but a sequence's last
        dq: T.Tensor((num_tokens, HQ, K), dtype),  # summed over each group
        dk: T.Tensor((num_tokens, HQ, K), dtype),
        dv: T.Tensor((num_tokens, HV, V), dtype),
        dg: T.Tensor((num_tokens, HV), accum),
        dbeta: T.Tensor((num_tokens, HV), accum),
        dh0: T.Tensor((NS, HV, K, V), accum),  # layout of dht
        scale: T.float32,
        use_dht: T.int32,
        store_dh0: T.int32,
        state_v_first: T.int32,
    ):
        # grid (v-head, segment row): the segment row slowest, so that a sequence's CTAs start together; a group's
        # CTAs of a row are one cluster, ranked by v-head within the group
        with T.Kernel(HV, NSEG, threads=512, cluster_dims=(group, 1, 1) if cluster_sum else None,
                      prelude=CLUSTER_PRELUDE if cluster_sum else None) as (hv, seg):
            grid_dependency(pdl)
            hq = hv // group  # the qk-head
            rank = hv % group  # the CTA's rank in its cluster
            num_seqs = N1 - 1
            n, c_first, n_iter, flags, seq_start, seq_end, do_end = segment_row(
                seg_seq, ranges, cu_seqlens, seg, seg, hv, num_seqs, num_tokens, BT)
            is_first = flags % 2 == 0  # the sequence's first segment stores dh0
            is_last = (flags // 2) % 2 == 1  # the sequence's last segment starts from dht
            first_slot = seq_start // BT + n  # docs/gdn_chunk_derivation.md, "Chunk slots"

            # inputs (WP), dS~ (WS)
            q_s = T.alloc_shared((BT, K), dtype)  # Q, then dq (WA)
            k_s = T.alloc_shared((BT, K), dtype)  # K, then dk (WK)
            h_s = T.alloc_shared((K, V), dtype)  # S~0
            dh_s = T.alloc_shared((K, V), dtype)  # dS~ (WS -> WK)
            w_s = T.alloc_shared((BT, V), dtype)  # V, then W (WK -> WA)
            do_s = T.alloc_shared((BT, V), dtype)  # dO, then scale * gamma * dO (WS, in place)
            a_s = T.alloc_shared((2, BT, BT), dtype)
            g_s = T.alloc_shared((2, BT), accum)
            b_s = T.alloc_shared((2, BT), accum)
            # hand-offs
            pg_s = T.alloc_shared((BT, BT), dtype)  # Pg (WA -> WK), then dA (WA)
            ag_s = T.alloc_shared((BT, BT), dtype)  # Ag (WA -> WK)
            dp_s = T.alloc_shared((BT, BT), dtype)  # dP, then dKs = dKK + dKK^T (WA -> WK)
            vd_s = T.alloc_shared((BT, V), dtype)  # Vd (WA -> WK), then dVg (WK -> WS)
            dvd_s = T.alloc_shared((BT, V), dtype)  # dVd (WK -> WA), then dv (WK)
            sq_s = T.alloc_shared((BT, BT + row_pad), accum)  # E's first part, E, dAb * A, dKK (WA)
            # per-row vectors: WA's, WK's, and WK -> WA (two stages by chunk parity)
            gam_a = T.alloc_shared((BT,), accum)
            gam_k = T.alloc_shared((BT,), accum)
            rr_k = T.alloc_shared((BT,), accum)
            gq_s = T.alloc_shared((BT,), accum)  # sum_k Q * dQ_state
            er_s = T.alloc_shared((BT,), accum)  # sum_j E_ij
            ec_s = T.alloc_shared((BT,), accum)  # sum_j E_ji
            db1_s = T.alloc_shared((BT,), accum)  # sum_i dAb_ij A_ij
            db2_s = T.alloc_shared((BT,), accum)  # sum_j dL_ij (K K^T)_ij
            dgc_s = T.alloc_shared((BT,), accum)
            gu_s = T.alloc_shared((2, BT), accum)  # sum_k K * (dVg S0^T)   (WK)
            ka_s = T.alloc_shared((2, BT), accum)  # sum_k K * dK_r         (WK)
            hs_s = T.alloc_shared((2, n_hs), accum)  # partial row sums of S0 * dS~ (WK)

            # WA's fragments
            pa = T.alloc_fragment((BT, BT), accum)  # scale * Gamma * P (held until E's first part), E, dL * K K^T
            gm = T.alloc_fragment((BT, BT), accum)  # Gamma (hold_gamma)
            ma = T.alloc_fragment((BT, BT), accum)  # Ag, dPg, dAb, A^T dA, dL
            ada_r = T.alloc_fragment((BT, BT), dtype)  # A^T dA, the register operand of (A^T dA) A^T
            acc_a = T.alloc_fragment((BT, V), accum)
            acc_h = T.alloc_fragment((BT, V // 2), accum)  # Vd's halves
            dqf = T.alloc_fragment((BT, K), accum)
            dq_r = T.alloc_fragment((BT, K), dtype)  # dq held until its staging (dq_after_da)
            rows_a = T.alloc_fragment((BT,), accum)
            rows_ac = T.alloc_fragment((BT,), accum)
            # WK's fragments
            acc_k = T.alloc_fragment((BT, V), accum)
            mk = T.alloc_fragment((BT, BT), accum)  # A^T dA, dL, dKs (dl_in_wk)
            pk = T.alloc_fragment((BT, BT), accum)  # K K^T, dL * K K^T (dl_in_wk); S0 dS~^T blocks (hs_gemm)
            adk_r = T.alloc_fragment((BT, BT), dtype)  # A^T dA, the register operand of (A^T dA) A^T (dl_in_wk)
            dkf = T.alloc_fragment((BT, K), accum)
            rows_k = T.alloc_fragment((BT,), accum)
            hprod = T.alloc_fragment((K // 4, V), accum)
            hsum = T.alloc_fragment((K // 4,), accum)
            # WS's
            ds_frag = T.alloc_fragment((K, V), accum)
            decay = T.alloc_var(accum)
            dgl = T.alloc_var(accum)
            cs = T.alloc_local((8,), accum)  # partial column sums (col_sums)

            # WP -> consumers (one phase per chunk; bar_ab per stage)
            bar_q = T.alloc_barrier(32)  # Q (the first producer warp)
            bar_k = T.alloc_barrier(32)  # K (the same warp)
            bar_h = T.alloc_barrier(32)
            bar_v = T.alloc_barrier(32)
            bar_do = T.alloc_barrier(32)
            bar_ab = T.alloc_barrier([32, 32])
            # consumers -> WP
            q_free = T.alloc_barrier(128)  # dq stored from Q's buffer (WS)
            k_free = T.alloc_barrier(128)  # K's last read, dKs K (WK, after WA's and WS's reads)
            h_free = T.alloc_barrier(256)  # S0 read (WA, WK)
            v_free = T.alloc_barrier(128)  # W read (WA)
            do_free = T.alloc_barrier(128)  # scaled dO read (WS)
            ab_free = T.alloc_barrier([384, 384])  # A, g, beta of a stage read (WA, WK, WS)
            # WA -> WK
            bar_pg = T.alloc_barrier(128)
            bar_ag = T.alloc_barrier(128)
            bar_vd = T.alloc_barrier(128)
            bar_dp = T.alloc_barrier(128)
            bar_dks = T.alloc_barrier(128)
            vd_read = T.alloc_barrier(128)  # WA's Vd read (WK may write dv there)
            # WK -> WA
            bar_dvd = T.alloc_barrier(128)
            bar_w = T.alloc_barrier(128)  # W written into V's buffer
            ag_read = T.alloc_barrier(128)  # Ag read (WA may write the next Ag)
            dp_read = T.alloc_barrier(128)  # dP^T Q done (WA may write dKs into dP's buffer, and dq into Q's)
            dks_read = T.alloc_barrier(128)  # dKs read (WA may write the next dP)
            # with dl_in_wk: WA -> WK (dA in Pg's buffer, WA done with E's fp32 buffer) and back
            bar_da = T.alloc_barrier(128)
            da_read = T.alloc_barrier(128)  # dA read (WA may write the next Pg)
            sq_free = T.alloc_barrier(128)  # WK's transposed read of dKK done (WA may write the next E1)
            # WA, WK -> WS
            do_read = T.alloc_barrier(256)  # dO read (WA, WK): WS may scale it in place
            bar_dqs = T.alloc_barrier(128)  # dq staged in Q's buffer (WA)
            bar_sums = T.alloc_barrier(128)  # gq, er, ec, db1, db2 of the chunk written (WA)
            bar_dv = T.alloc_barrier(128)  # dv written into Vd's buffer (WK)
            dv_read = T.alloc_barrier(128)  # WK's dv S0^T done: WS may scale dv into dVg in place
            bar_kg = T.alloc_barrier(128)  # gu, ka, hs of the chunk written (WK)
            bar_dkst = T.alloc_barrier(128)  # dk staged in dVd's buffer (WK)
            bar_dh = T.alloc_barrier(128)  # dS~ written (WS)
            # WS -> WA, WK
            dh_free = T.alloc_barrier(128)  # dS~ read (WK)
            ws_q = T.alloc_barrier(128)  # WS's Q^T dO done (WA may stage dq in Q's buffer)
            ws_k = T.alloc_barrier(128)  # WS's K^T dVg done (K may be reloaded once WK's dKs K is done)
            vd_free = T.alloc_barrier(128)  # dVg read (WS): WA may write the next Vd
            sums_read = T.alloc_barrier(128)  # WA's per-row sums read (WA may write the next chunk's)
            dk_stored = T.alloc_barrier(128)  # dk stored from dVd's buffer (WK may write the next dVd)
            if cluster_sum:
                # the senders' WA -> rank 0's WS (dq staged), the senders' WK -> rank group - 1's WS (dk staged); the
                # receivers arrive on the senders' q_free and dk_stored once they have read the staged part
                dq_in = T.alloc_cluster_barrier(128 * (group - 1))
                dk_in = T.alloc_cluster_barrier(128 * (group - 1))

            tx = T.get_thread_binding()

            if tx < 128:
                # ================= WA: Ag, Pg, Vd, dP, dQ (staged), dAb, E, dA, dL, dKs and its per-row sums
                T.set_max_nreg(regs[0], 1)
                for i in T.serial(n_iter):
                    st = i % 2
                    ph = i % 2
                    T.barrier_wait(bar_ab[st], (i // 2) % 2)
                    for r in T.Parallel(BT):
                        gam_a[r] = T.exp2(g_s[st, r] * LOG2E)
                    # ---- Ag first (it needs no Q or K, whose loads may still be in flight), then P and Pg (held in pa
                    # until E's first part)
                    if hold_gamma:
                        form_gamma(gm, g_s, st, BT)
                    gate_a(ma, gm, g_s, a_s, b_s, st, hold_gamma, BT)
                    T.barrier_wait(ag_read[0], (i + 1) % 2)
                    T.copy(ma, ag_s)
                    T.fence_proxy_async()
                    T.barrier_arrive(bar_ag[0])
                    T.barrier_wait(bar_q[0], ph)
                    T.barrier_wait(bar_k[0], ph)
                    T.gemm(q_s, k_s, pa, transpose_B=True, clear_accum=True)
                    scale_gamma(pa, gm, g_s, st, scale, hold_gamma, BT)
                    if dl_in_wk:
                        T.barrier_wait(da_read[0], (i + 1) % 2)
                    T.copy(pa, pg_s)
                    T.fence_proxy_async()
                    T.barrier_arrive(bar_pg[0])

                    # ---- Vd = Ag W in two 64-column halves, into Vd's buffer once the previous dVg has been read
                    T.barrier_wait(bar_w[0], ph)
                    T.gemm(ag_s, w_s[:, 0:V // 2], acc_h, clear_accum=True)
                    T.barrier_wait(vd_free[0], (i + 1) % 2)
                    T.copy(acc_h, vd_s[:, 0:V // 2])
                    T.gemm(ag_s, w_s[:, V // 2:V], acc_h, clear_accum=True)
                    T.copy(acc_h, vd_s[:, V // 2:V])
                    T.fence_proxy_async()
                    T.barrier_arrive(bar_vd[0])

                    # ---- dPg = dO Vd^T: E's first part Pg * dPg, dP = scale * Gamma * dPg (WK's dP^T Q)
                    T.barrier_wait(bar_do[0], ph)
                    T.gemm(do_s, vd_s, ma, transpose_B=True, clear_accum=True)
                    T.barrier_arrive(vd_read[0])
                    for r, c in T.Parallel(BT, BT):
                        pa[r, c] = pa[r, c] * ma[r, c]
                    if dl_in_wk:
                        T.barrier_wait(sq_free[0], (i + 1) % 2)
                    T.copy(pa, sq_s[:, 0:BT])
                    scale_gamma(ma, gm, g_s, st, scale, hold_gamma, BT)
                    T.barrier_wait(dks_read[0], (i + 1) % 2)
                    T.copy(ma, dp_s)
                    T.fence_proxy_async()
                    T.barrier_arrive(bar_dp[0])
                    # ---- dQ = dP K + scale * gamma * (dO S0^T); the state part's row products with Q (a gate). The
                    # last reads of dO and S0 here
                    if dq_fold:
                        T.gemm(do_s, h_s, dqf, transpose_B=True, clear_accum=True)
                        T.barrier_arrive(h_free[0])
                        T.barrier_arrive(do_read[0])
                        for r, c in T.Parallel(BT, K):
                            dqf[r, c] *= scale * gam_a[r]
                        row_products_by_halves(dqf, q_s, ma, rows_a, rows_ac, BT)
                        T.gemm(dp_s, k_s, dqf)
                    else:
                        T.gemm(dp_s, k_s, dqf, clear_accum=True)
                        T.gemm(do_s, h_s, acc_a, transpose_B=True, clear_accum=True)
                        T.barrier_arrive(h_free[0])
                        T.barrier_arrive(do_read[0])
                        add_state_part(dqf, acc_a, q_s, gam_a, scale, rows_a, BT, K)
                    if dq_after_da:
                        T.copy(dqf, dq_r)
                    T.barrier_wait(sums_read[0], (i + 1) % 2)
                    for r in T.Parallel(BT):
                        gq_s[r] = rows_a[r]

                    # ---- dAb = Gamma * (dVd W^T)
                    T.barrier_wait(bar_dvd[0], ph)
                    T.gemm(dvd_s, w_s, ma, transpose_B=True, clear_accum=True)
                    T.barrier_arrive(v_free[0])
                    # ---- dq staged in Q's buffer once WK's dP^T Q and WS's Q^T dO are done (WS stores it); with
                    # dq_after_da after dA. In a cluster the other v-heads hand their staged dq to rank 0, which adds
                    # them into its own (then their Q buffers may be refilled)
                    if not dq_after_da:
                        T.barrier_wait(dp_read[0], ph)
                        T.barrier_wait(ws_q[0], ph)
                        T.copy(dqf, q_s)
                        if cluster_sum:
                            if rank != 0:
                                arrive_cluster(dq_in, 0)
                        T.barrier_arrive(bar_dqs[0])
                    # ---- E = E1 + dAb * A * beta_col; dA = dAb * beta_col into Pg's buffer
                    gate_e(ma, pa, gm, sq_s, g_s, a_s, b_s, st, hold_gamma, BT)
                    # Gamma's gate: row sums of E here, its column sums from fp32 shared memory
                    T.reduce_sum(pa, rows_ac, dim=1)
                    for r in T.Parallel(BT):
                        er_s[r] = rows_ac[r]
                    T.copy(pa, sq_s[:, 0:BT])
                    col_sums(sq_s, ec_s, cs, tx, BT)
                    # dAb * A's column sums, then dA = dAb * beta_col by stmatrix
                    for r, c in T.Parallel(BT, BT):
                        pa[r, c] = ma[r, c] * a_s[st, r, c]
                    T.copy(pa, sq_s[:, 0:BT])
                    col_sums(sq_s, db1_s, cs, tx, BT)
                    for r, c in T.Parallel(BT, BT):
                        ma[r, c] = ma[r, c] * b_s[st, c]
                    T.copy(ma, pg_s)

                    if dl_in_wk:  # WK forms dL, dbeta's second part and dKs
                        T.fence_proxy_async()
                        T.barrier_arrive(bar_da[0])
                        if dq_after_da:
                            T.barrier_wait(dp_read[0], ph)
                            T.barrier_wait(ws_q[0], ph)
                            T.copy(dq_r, q_s)
                            T.barrier_arrive(bar_dqs[0])
                        T.barrier_arrive(bar_sums[0])
                        T.barrier_arrive(ab_free[st])
                    else:
                        # ---- dL = strictLower(-A^T dA A^T) (A^T dA the register operand of its second product);
                        # dbeta += rowsum(dL * K K^T); dKs = dKK + dKK^T into dP's buffer (WK's dP^T Q is done)
                        T.gemm(a_s[st, :, :], pg_s, ma, transpose_A=True, clear_accum=True)
                        T.copy(ma, ada_r)
                        T.gemm(ada_r, a_s[st, :, :], ma, transpose_B=True, clear_accum=True)
                        T.gemm(k_s, k_s, pa, transpose_B=True, clear_accum=True)
                        lower_dl(ma, pa, b_s, st, BT)
                        T.copy(ma, sq_s[:, 0:BT])
                        T.reduce_sum(pa, rows_ac, dim=1)
                        for r in T.Parallel(BT):
                            db2_s[r] = rows_ac[r]
                        # the transposed reads of the padded fp32 rows are conflict-free in the fragment's layout
                        for r, c in T.Parallel(BT, BT):
                            ma[r, c] = ma[r, c] + sq_s[c, r]
                        T.copy(ma, dp_s)
                        T.fence_proxy_async()
                        T.barrier_arrive(bar_dks[0])
                        T.barrier_arrive(bar_sums[0])
                        T.barrier_arrive(ab_free[st])

            elif tx < 256:
                # ================= WK: W, dVd, dK, dv (staged), dk (staged)
                T.set_max_nreg(regs[1], 1)
                for i in T.serial(n_iter):
                    t0 = seq_start + (c_first + n_iter - 1 - i) * BT
                    n_valid = T.max(T.min(seq_end - t0, BT), 0)
                    st = i % 2
                    ph = i % 2
                    T.barrier_wait(bar_ab[st], (i // 2) % 2)
                    for r in T.Parallel(BT):
                        gam_k[r] = T.exp2(g_s[st, r] * LOG2E)
                        rr_k[r] = T.if_then_else(r < n_valid, T.exp2((g_s[st, BT - 1] - g_s[st, r]) * LOG2E), 0.0)
                    if not dl_in_wk:  # else WK reads A and beta of the stage again for dL
                        T.barrier_arrive(ab_free[st])

                    # ---- U = K S0, W = V - gamma * U into V's buffer, for WA's Vd = Ag W
                    T.barrier_wait(bar_h[0], ph)
                    T.barrier_wait(bar_k[0], ph)
                    T.gemm(k_s, h_s, acc_k, clear_accum=True)
                    T.barrier_wait(bar_v[0], ph)
                    for r, c in T.Parallel(BT, V):
                        acc_k[r, c] = w_s[r, c] - gam_k[r] * acc_k[r, c]
                    T.copy(acc_k, w_s)
                    T.fence_proxy_async()
                    T.barrier_arrive(bar_w[0])

                    # ---- dVd = r * (K dS~) + Pg^T dO (WA's dAb waits for it), into dVd's buffer once the previous
                    # chunk's dk has left it
                    T.barrier_wait(bar_dh[0], ph)
                    T.gemm(k_s, dh_s, acc_k, clear_accum=True)
                    for r, c in T.Parallel(BT, V):
                        acc_k[r, c] *= rr_k[r]
                    T.barrier_wait(bar_pg[0], ph)
                    T.barrier_wait(bar_do[0], ph)
                    T.gemm(pg_s, do_s, acc_k, transpose_A=True)
                    T.barrier_arrive(do_read[0])
                    if cluster_sum:  # (a sender's dk_stored: its receiver has read the staged dk)
                        wait_cluster(dk_stored, (i + 1) % 2)
                    else:
                        T.barrier_wait(dk_stored[0], (i + 1) % 2)
                    T.copy(acc_k, dvd_s)
                    T.fence_proxy_async()
                    T.barrier_arrive(bar_dvd[0])

                    # ---- <S0, dS~>'s row sums (the whole-chunk gate), K / 4 partial sums
                    if hs_gemm:
                        gemm_state_sums(h_s, dh_s, pk, hs_s, st, BT)
                    else:
                        fold_state_row_sums(h_s, dh_s, hprod, hsum, hs_s, st, K, V)

                    # ---- dK = r * (Vd dS~^T) (the chunk's first term of dK); its row products with K (the gate of r)
                    T.barrier_wait(bar_vd[0], ph)
                    T.gemm(vd_s, dh_s, dkf, transpose_B=True, clear_accum=True)
                    T.barrier_arrive(dh_free[0])
                    for r, c in T.Parallel(BT, K):
                        dkf[r, c] *= rr_k[r]
                    for r, c in T.Parallel(BT, K):
                        acc_k[r, c] = dkf[r, c] * k_s[r, c]
                    T.reduce_sum(acc_k, rows_k, dim=1)
                    for r in T.Parallel(BT):
                        ka_s[st, r] = rows_k[r]

                    # ---- dv = Ag^T dVd into Vd's buffer once WA's dPg has read Vd (WS stores it and scales it into
                    # dVg for its K^T dVg)
                    T.barrier_wait(bar_ag[0], ph)
                    T.gemm(ag_s, dvd_s, acc_k, transpose_A=True, clear_accum=True)
                    T.barrier_arrive(ag_read[0])
                    T.barrier_wait(vd_read[0], ph)
                    T.copy(acc_k, vd_s)
                    T.fence_proxy_async()
                    T.barrier_arrive(bar_dv[0])

                    # ---- dK += dVg S0^T = -gamma * (dv S0^T); its row products with K (the gate of W)
                    T.gemm(vd_s, h_s, acc_k, transpose_B=True, clear_accum=True)
                    T.barrier_arrive(h_free[0])
                    T.barrier_arrive(dv_read[0])
                    for r, c in T.Parallel(BT, K):
                        acc_k[r, c] *= -gam_k[r]
                    for r, c in T.Parallel(BT, K):
                        dkf[r, c] += acc_k[r, c]
                        acc_k[r, c] = acc_k[r, c] * k_s[r, c]
                    T.reduce_sum(acc_k, rows_k, dim=1)
                    for r in T.Parallel(BT):
                        gu_s[st, r] = rows_k[r]
                    T.barrier_arrive(bar_kg[0])

                    # ---- dK += dP^T Q, then dKs K (K's last read: with WS's K^T dVg done, K may be reloaded)
                    T.barrier_wait(bar_dp[0], ph)
                    T.gemm(dp_s, q_s, dkf, transpose_A=True)
                    T.barrier_arrive(dp_read[0])
                    if dl_in_wk:
                        # ---- dL = strictLower(-A^T dA A^T); dbeta += rowsum(dL * K K^T); dKs = dKK + dKK^T (the
                        # transpose through E's fp32 buffer) into dP's buffer
                        T.barrier_wait(bar_da[0], ph)
                        T.gemm(a_s[st, :, :], pg_s, mk, transpose_A=True, clear_accum=True)
                        T.barrier_arrive(da_read[0])
                        T.copy(mk, adk_r)
                        T.gemm(adk_r, a_s[st, :, :], mk, transpose_B=True, clear_accum=True)
                        T.gemm(k_s, k_s, pk, transpose_B=True, clear_accum=True)
                        lower_dl(mk, pk, b_s, st, BT)
                        T.barrier_arrive(ab_free[st])
                        T.copy(mk, sq_s[:, 0:BT])
                        T.reduce_sum(pk, rows_k, dim=1)
                        for r in T.Parallel(BT):
                            db2_s[r] = rows_k[r]
                        for r, c in T.Parallel(BT, BT):
                            mk[r, c] = mk[r, c] + sq_s[c, r]
                        T.barrier_arrive(sq_free[0])
                        T.copy(mk, dp_s)
                        T.fence_proxy_async()
                        T.gemm(dp_s, k_s, dkf)
                        T.barrier_arrive(dks_read[0])
                    else:
                        T.barrier_wait(bar_dks[0], ph)
                        T.gemm(dp_s, k_s, dkf)
                        T.barrier_arrive(dks_read[0])
                    T.barrier_wait(ws_k[0], ph)
                    T.barrier_arrive(k_free[0])
                    # ---- dk staged in dVd's buffer (WA's dAb has read dVd: it arrived on bar_dks after); WS stores it.
                    # In a cluster the others hand their staged dk to rank group - 1, which adds them into its own
                    T.copy(dkf, dvd_s)
                    if cluster_sum:
                        if rank != group - 1:
                            arrive_cluster(dk_in, group - 1)
                    T.barrier_arrive(bar_dkst[0])

            elif tx < 384:
                # ================= WS: dS, and the chunk's stores of dq, dv, dk, dg, dbeta
                T.set_max_nreg(regs[2], 1)
                start_state(ds_frag, 0, 0, 0, not is_last and n_iter > 0, cp_ds, seg, use_dht != 0 and is_last,
                            dht, n, hv, state_v_first, K, V)
                # dS~ of the last chunk for WK (a fresh buffer: no reader to wait for)
                T.copy(ds_frag, dh_s)
                T.fence_proxy_async()
                T.barrier_arrive(bar_dh[0])
                for i in T.serial(n_iter):
                    t0 = seq_start + (c_first + n_iter - 1 - i) * BT
                    n_valid = T.max(T.min(seq_end - t0, BT), 0)
                    last = T.max(n_valid - 1, 0)
                    st = i % 2
                    ph = i % 2
                    T.barrier_wait(bar_ab[st], (i // 2) % 2)
                    decay = T.exp2(g_s[st, BT - 1] * LOG2E)
                    for a, b in T.Parallel(K, V):
                        ds_frag[a, b] *= decay
                    # ---- dS += Q^T (scale * gamma * dO), dO scaled in place once WA and WK have read it
                    T.barrier_wait(do_read[0], ph)
                    for r, c in T.Parallel(BT, V):
                        do_s[r, c] = T.cast(scale * T.exp2(g_s[st, r] * LOG2E) * T.cast(do_s[r, c], accum), dtype)
                    T.fence_proxy_async()
                    T.barrier_wait(bar_q[0], ph)
                    T.gemm(q_s, do_s, ds_frag, transpose_A=True)
                    T.barrier_arrive(do_free[0])
                    T.barrier_arrive(ws_q[0])
                    # ---- dv stored from Vd's buffer, scaled there into dVg = -gamma * dv once WK's dv S0^T has read
                    # it; dS += K^T dVg
                    T.barrier_wait(bar_dv[0], ph)
                    store_chunk_rows(vd_s, dv, t0, hv, n_valid, n_valid, BT, V, dtype)
                    T.barrier_wait(dv_read[0], ph)
                    for r, c in T.Parallel(BT, V):
                        vd_s[r, c] = T.cast(-T.exp2(g_s[st, r] * LOG2E) * T.cast(vd_s[r, c], accum), dtype)
                    T.fence_proxy_async()
                    T.barrier_arrive(ab_free[st])
                    T.barrier_wait(bar_k[0], ph)
                    T.gemm(k_s, vd_s, ds_frag, transpose_A=True)
                    T.barrier_arrive(vd_free[0])
                    T.barrier_arrive(ws_k[0])
                    # ---- dS~ of the next chunk (the one before in the sequence) for WK; after the last chunk this is
                    # dS at the segment's start, which no one reads
                    T.barrier_wait(dh_free[0], i % 2)
                    T.copy(ds_frag, dh_s)
                    T.fence_proxy_async()
                    T.barrier_arrive(bar_dh[0])
                    # ---- dq stored from Q's buffer; in a cluster by rank 0 once it has added the others' staged dq into
                    # its own (then their Q buffers are free)
                    if cluster_sum:
                        if rank == 0:
                            T.barrier_wait(bar_dqs[0], ph)
                            wait_cluster(dq_in, ph)
                            for s in T.unroll(group - 1):
                                add_remote_tile(q_s, s + 1, tx - 256, 128, BAR_WS_SUM, BT * K * 2, is_bf16)
                            for s in T.unroll(group - 1):
                                arrive_cluster(q_free, s + 1)
                            store_chunk_rows(q_s, dq, t0, hq, n_valid, n_valid, BT, K, dtype)
                            T.barrier_arrive(q_free[0])
                    else:
                        T.barrier_wait(bar_dqs[0], ph)
                        store_chunk_rows(q_s, dq, t0, hq, n_valid, n_valid, BT, K, dtype)
                        T.barrier_arrive(q_free[0])
                    # ---- dg and dbeta: dgc from WA's and WK's per-row sums, the whole-chunk terms on the last real
                    # token (gamma_last <dS~, S0> and sum K * dK_r), its reverse cumsum
                    T.barrier_wait(bar_sums[0], ph)
                    T.barrier_wait(bar_kg[0], ph)
                    for r in T.Parallel(BT):
                        dgc_s[r] = T.if_then_else(
                            r < n_valid, gu_s[st, r] - ka_s[st, r] + gq_s[r] + er_s[r] - ec_s[r], 0.0)
                    add_whole_chunk_terms(dgc_s, hs_s, ka_s, st, decay, last, tx - 256, dgl, n_hs, BT)
                    if tx == 256:
                        for j in T.serial(BT - 1):
                            dgc_s[BT - 2 - j] = dgc_s[BT - 2 - j] + dgc_s[BT - 1 - j]
                    # (dbeta's second part is WK's with dl_in_wk: written before it staged dk)
                    T.barrier_wait(bar_dkst[0], ph)
                    for r in T.Parallel(BT):
                        if r < n_valid:
                            dg[t0 + r, hv] = dgc_s[r]
                            dbeta[t0 + r, hv] = db1_s[r] + db2_s[r]
                    T.barrier_arrive(sums_read[0])
                    # ---- dk stored from dVd's buffer; in a cluster by rank group - 1 once it has added the others' staged
                    # dk into its own
                    if cluster_sum:
                        if rank == group - 1:
                            wait_cluster(dk_in, ph)
                            for s in T.unroll(group - 1):
                                add_remote_tile(dvd_s, s, tx - 256, 128, BAR_WS_SUM, BT * K * 2, is_bf16)
                            for s in T.unroll(group - 1):
                                arrive_cluster(dk_stored, s)
                            store_chunk_rows(dvd_s, dk, t0, hq, n_valid, n_valid, BT, K, dtype)
                            T.barrier_arrive(dk_stored[0])
                    else:
                        store_chunk_rows(dvd_s, dk, t0, hq, n_valid, n_valid, BT, K, dtype)
                        T.barrier_arrive(dk_stored[0])
                end_state(ds_frag, 0, n_iter, dh0, 0, NSEG, seg, store_dh0 != 0 and is_first and n < num_seqs, dh0, n,
                          hv, 0, state_v_first, K, V)

            else:
                # ================= WP: loads, one warp per input, last chunk first
                T.set_max_nreg(regs[3], 0)
                if tx < 384 + 32:
                    # S0 (once WA and WK have read the previous one), Q (once dq has left its buffer), K (once read)
                    for i in T.serial(n_iter):
                        c = c_first + n_iter - 1 - i
                        t0 = seq_start + c * BT
                        n_valid = T.max(T.min(seq_end - t0, BT), 0)
                        full = seq_end - t0 >= BT
                        T.barrier_wait(h_free[0], (i + 1) % 2)
                        T.tma_copy(h[first_slot + c, hv, 0:K, 0:V], h_s, barrier=bar_h[0])
                        T.barrier_arrive(bar_h[0])
                        if cluster_sum:  # (a sender's q_free: its receiver has read the staged dq)
                            wait_cluster(q_free, (i + 1) % 2)
                        else:
                            T.barrier_wait(q_free[0], (i + 1) % 2)
                        load_tile(q, q_s, bar_q, t0, hq, n_valid, full, BT, K, dtype, True)
                        T.barrier_arrive(bar_q[0])
                        T.barrier_wait(k_free[0], (i + 1) % 2)
                        load_tile(k, k_s, bar_k, t0, hq, n_valid, full, BT, K, dtype, True)
                        T.barrier_arrive(bar_k[0])
                elif tx < 384 + 64:
                    # V
                    for i in T.serial(n_iter):
                        t0 = seq_start + (c_first + n_iter - 1 - i) * BT
                        n_valid = T.max(T.min(seq_end - t0, BT), 0)
                        full = seq_end - t0 >= BT
                        T.barrier_wait(v_free[0], (i + 1) % 2)
                        load_tile(v, w_s, bar_v, t0, hv, n_valid, full, BT, V, dtype, True)
                        T.barrier_arrive(bar_v[0])
                    # the padding tail [cu[N], T) gets zero gradients (the chunk-parallel kernel's tail slots wrote
                    # them): by this warp of the first segment row's CTAs, once its loads are issued
                    if seg == 0:
                        tail = seq_bound(cu_seqlens, num_seqs, num_tokens)
                        for r in T.serial(num_tokens - tail):
                            for c in T.Parallel(K):
                                dq[tail + r, hq, c] = T.cast(0, dtype)  # (by each CTA of a group)
                                dk[tail + r, hq, c] = T.cast(0, dtype)
                                dv[tail + r, hv, c] = T.cast(0, dtype)
                            if tx == 384 + 32:
                                dg[tail + r, hv] = 0.0
                                dbeta[tail + r, hv] = 0.0
                elif tx < 384 + 96:
                    # dO
                    for i in T.serial(n_iter):
                        t0 = seq_start + (c_first + n_iter - 1 - i) * BT
                        n_valid = T.max(T.min(seq_end - t0, BT), 0)
                        full = seq_end - t0 >= BT
                        T.barrier_wait(do_free[0], (i + 1) % 2)
                        load_tile(d_o, do_s, bar_do, t0, hv, n_valid, full, BT, V, dtype, True)
                        T.barrier_arrive(bar_do[0])
                else:
                    # A, g (repeating the last real cumsum), beta (0 past the chunk's end): two stages
                    for i in T.serial(n_iter):
                        t0 = seq_start + (c_first + n_iter - 1 - i) * BT
                        n_valid = T.max(T.min(seq_end - t0, BT), 0)
                        last = T.max(n_valid - 1, 0)
                        full = seq_end - t0 >= BT
                        st = i % 2
                        T.barrier_wait(ab_free[st], (i // 2 + 1) % 2)
                        if full:
                            T.tma_copy(A[t0:t0 + BT, hv, 0:BT], a_s[st, :, :], barrier=bar_ab[st])
                        else:
                            for r, c in T.Parallel(BT, BT):
                                a_s[st, r, c] = T.if_then_else(r < n_valid, A[t0 + r, hv, c], T.cast(0, dtype))
                        for r in T.Parallel(BT):
                            g_s[st, r] = g_cumsum[T.min(t0 + T.min(r, last), num_tokens - 1), hv]
                            b_s[st, r] = T.if_then_else(r < n_valid, beta[T.min(t0 + r, num_tokens - 1), hv], 0.0)
                        T.fence_proxy_async()
                        T.barrier_arrive(bar_ab[st])

            if cluster_sum:
                cluster_sync()

    return gdn_bwd_fused
