"""Context parallelism's correction walk with the state transposed in registers ("rs").

cp_correct.py's walk, S_{j+1} = E_j + [plan_j < 0] M_j S_j per sequence, v-head and V slice (read its docstring
first: the plan, the reverse walk of the backward, the split transitions), written as gdn_fwd_rs.py writes the
forward: the slice's state lives as S^T [BV, K] (fp32) in the registers of one warpgroup, and each step forms

    S_{j+1}^T = E_j^T + S_j^T M_j^T

with S_j^T's bf16 high and low parts as the register (A) operands of wgmma and M_j's parts (stored split by the
warm-up pass, `warmup` = 2, common/bf16_split.py split_slots) the shared-memory B operand, read transposed
(transpose_B: M_j as it lies in memory). cp_correct.py's step splits S_j into shared memory, fences, syncs the block
and then multiplies; here the split stays in registers and the products accumulate onto E_j^T directly, so a
step's chain is the split, three products and their wait (the split walk's step took 2.25 us on an H100, 44th
session, of which its products are, by their wgmma count, well under a microsecond).

A step's loads run ahead: M and E of step jj + 2 land by TMA in the buffers step jj has finished with, and E of step
jj + 1 is read from shared memory into registers (transposed) while step jj's products run. S_{j+1}^T goes to cp_h0
through a shared tile and one TMA store (the tiles are swizzled: the threads read E and write S transposed). The same
three products (hi hi + hi lo + lo hi) as cp_correct.py, added in another order (onto E instead of E plus their sum):
the results agree with the 32-wide walk's within the CP tolerance (tests/test_walk_rs_gpu.py; passed on an H100 in
the 44th session, and in the 45th with the swizzled tiles and with the e_global / direct-store options).

BV = 64: one warpgroup's m64 rows, two CTAs per head and sequence (the 32-wide walk runs four).

Measured (H100, 45th and 46th sessions, benchmarks/walk_bench.py, benchmarks/results/s45/ and s46/README.md): 2.83
us per step against the default 32-wide split walk's 2.40. The 45th session's "without its store 1.11 us" was ptxas
dropping the products that nothing read (store = "none": 3 of 24 HGMMA left), and no form of the store (`store`
below), nor a step without any proxy fence, made the step shorter; E in registers (`e_global`) is slower. The
options stay for walk_bench.py's diagnostics; the wheel builds the defaults.
"""

import tilelang.language as T
from tilelang.layout import make_swizzled_layout

from common.bf16_split import split_slots
from common.grid_dependency import grid_dependency
from common.segments import load_state_t, walk_span
from common.walk_dims import correction_dims


def gdn_cp_correct_rs_sm90(K: int = 128, V: int = 128, BT: int = 64, BV: int = 64, pdl: bool = False,
                           e_first: bool = False, e_global: bool = False, products: int = 3, store: str = "tma",
                           load_ml: bool = True, reload: bool = True):
    """The walk with S^T in one warpgroup's registers; the launcher's signature is cp_correct.py's (the host passes
    the same arguments). 224 KB of shared memory: two buffers of M's halves and of E, and S's store tile.
    e_first: a step's fetch issues E before M's halves (E_{j+1} is read during step j, M_{j+1} only at step j + 1's
    start; s45_1's profile had the walk waiting for E after its products). e_global: E_{j+1}^T read from global memory
    straight into registers during step j (no shared tile, no mbarrier), and M's halves in three buffers, fetched
    three steps ahead (the shared memory E's two tiles took). store: how S_{j+1} reaches cp_h0: "tma" (through out_s
    and one TMA store, waited at the next step), "threads" (through out_s, then copied out by the threads with 16-byte
    loads and stores: no TMA store to wait for) or "direct" (each thread's 64 values stored from its registers). With
    e_global and store = "direct" no proxy fence is left in a step (TileLang's InjectFenceProxy adds its own wherever a
    step writes shared memory by the threads). Diagnostics for benchmarks/walk_bench.py only, wrong results by design:
    products = 0 (no split, no products: S_{j+1} = E_j, the loads' and stores' chain alone), store = "none" (S_{j+1}
    not written; ptxas then drops the products whose results nothing reads: 3 HGMMA of 24 in its SASS, so it times the
    loads, 46th session), store = "final" (only the last state written, from the registers: the chain of products
    kept), load_ml = False (M's low half never loaded: with products = 0, the time of a step against the bytes it
    loads), reload = False (only the first `depth` steps' operands fetched, later steps multiply by stale tiles: the
    step without its loads)."""
    assert load_ml or not products, "load_ml = False only without products"
    assert not (e_first and e_global), "e_first orders E's TMA load, which e_global has none of"
    assert store in ("tma", "threads", "direct", "none", "final")
    # a generic-proxy access in a step that the async proxy must see ordered: the threads' reads of E's tile before
    # its TMA refill, their writes of out_s before the TMA store
    fence = not e_global or store == "tma"
    depth = 3 if e_global else 2  # M's buffers: step jj's in buffer jj % depth, fetched at step jj - depth's end
    assert BV == 64, "S^T [BV, K] is one warpgroup's m64 rows"
    assert products in (0, 3), "3, or 0 to time the chain without its products"
    threads = 128
    NV = V // BV
    HV, N1, NS, NSEG, NGRID = correction_dims()  # common/walk_dims.py
    accum = "float32"
    half = "bfloat16"

    @T.macro
    def fetch(cp_out, slot, hv, v0, buf, mh_s, ml_s, e_s, bar_mh, bar_ml, bar_e, tx):
        """M's halves of segment slot `slot` and its E columns into buffer buf, by TMA issued by warp 0, each on its
        own mbarrier of the buffer."""
        if tx < 32:
            if e_first and not e_global:
                T.tma_copy(cp_out[slot, hv, 0:K, v0:v0 + BV], e_s[buf, :, :], barrier=bar_e[buf],
                           leader_scope_threads=32)
                T.barrier_arrive(bar_e[buf])
            T.tma_copy(split_slots(cp_out)[NSEG + slot, hv, 0, 0:K, 0:K], mh_s[buf, :, :], barrier=bar_mh[buf],
                       leader_scope_threads=32)
            T.barrier_arrive(bar_mh[buf])
            if load_ml:
                T.tma_copy(split_slots(cp_out)[NSEG + slot, hv, 1, 0:K, 0:K], ml_s[buf, :, :], barrier=bar_ml[buf],
                           leader_scope_threads=32)
                T.barrier_arrive(bar_ml[buf])
            if not e_first and not e_global:
                T.tma_copy(cp_out[slot, hv, 0:K, v0:v0 + BV], e_s[buf, :, :], barrier=bar_e[buf],
                           leader_scope_threads=32)
                T.barrier_arrive(bar_e[buf])

    @T.macro
    def store_state_t(cp_h0, row, hv, v0, s_frag):
        """S^T's registers into cp_h0's row `row` (store = "direct" each step, "final" after the walk)."""
        for a, c in T.Parallel(BV, K):
            cp_h0[row, hv, c, v0 + a] = s_frag[a, c]

    @T.prim_func
    def gdn_cp_correct(
        cu_seqlens: T.Tensor((N1,), "int32"),
        h0: T.Tensor((NS, HV, K, V), accum),  # [N, HV, K, V], or [N, HV, V, K] if state_v_first
        cp_plan: T.Tensor((NSEG, HV), "int32"),
        cp_out: T.Tensor((NGRID, HV, K, V), accum),  # rows [0, NSEG) E (fp32), [NSEG, 2 NSEG) M (split_slots)
        cp_h0: T.Tensor((NSEG, HV, K, V), accum),
        num_tokens: T.int32,
        seg_tokens: T.int32,
        use_h0: T.int32,
        state_v_first: T.int32,
        reverse: T.int32,  # 1: the backward's end-of-segment gradients, last segment first
    ):
        with T.Kernel(N1 - 1, HV, NV, threads=threads) as (n, hv, vb):
            grid_dependency(pdl)
            v0 = vb * BV
            tx = T.get_thread_binding()
            first = T.alloc_var("int32", init=0)
            last_j = T.alloc_var("int32", init=0)
            num_segs = walk_span(cu_seqlens, n, num_tokens, seg_tokens, BT, first, last_j)
            num_steps = T.alloc_var("int32", init=0)
            num_steps = T.max(num_segs - 1, 0)

            mh_s = T.alloc_shared((depth, K, K), half)  # M's halves, buffer jj % depth for step jj
            ml_s = T.alloc_shared((depth, K, K), half)
            e_s = None if e_global else T.alloc_shared((2, K, BV), accum)  # E's columns of the slice
            out_s = T.alloc_shared((K, BV), accum)  # S_{j+1}'s columns, for the TMA store (or the threads' copy)
            # swizzled: read (e_s) and written (out_s) transposed by the threads, whose fragment rows are the tiles'
            # columns: a plain [K, BV] fp32 tile puts four lanes of a warp on each bank (s44_3: the walk stalled on
            # those reads and on 64 scalar stores per thread per step)
            if e_global:
                T.annotate_layout({out_s: make_swizzled_layout(out_s)})
            else:
                T.annotate_layout({e_s: make_swizzled_layout(e_s), out_s: make_swizzled_layout(out_s)})
            s_frag = T.alloc_fragment((BV, K), accum)  # S^T, the products' accumulator
            e_frag = T.alloc_fragment((BV, K), accum)  # the step's E^T, read ahead (from e_s, or global memory)
            sh_frag = T.alloc_fragment((BV, K), half)  # S^T's bf16 parts: the products' A operands
            sl_frag = T.alloc_fragment((BV, K), half)
            bar_mh = T.alloc_barrier([32] * depth)
            bar_ml = T.alloc_barrier([32] * depth)
            bar_e = None if e_global else T.alloc_barrier([32, 32])

            # the first depth steps' operands (walk position jj is segment j = jj, or last_j - jj in reverse)
            if num_steps > 0:
                fetch(cp_out, first + T.if_then_else(reverse != 0, last_j, 0), hv, v0, 0, mh_s, ml_s, e_s, bar_mh,
                      bar_ml, bar_e, tx)
            if num_steps > 1:
                fetch(cp_out, first + T.if_then_else(reverse != 0, last_j - 1, 1), hv, v0, 1, mh_s, ml_s, e_s,
                      bar_mh, bar_ml, bar_e, tx)
            if depth == 3 and num_steps > 2:
                fetch(cp_out, first + T.if_then_else(reverse != 0, last_j - 2, 2), hv, v0, 2, mh_s, ml_s, e_s,
                      bar_mh, bar_ml, bar_e, tx)
            if use_h0 != 0:
                load_state_t(s_frag, h0, n, hv, v0, state_v_first, K, BV)
            else:
                T.clear(s_frag)
            if num_steps > 0:
                if e_global:
                    for a, c in T.Parallel(BV, K):
                        e_frag[a, c] = cp_out[first + T.if_then_else(reverse != 0, last_j, 0), hv, c, v0 + a]
                else:
                    T.barrier_wait(bar_e[0], 0)
                    for a, c in T.Parallel(BV, K):
                        e_frag[a, c] = e_s[0, c, a]

            for jj in T.serial(num_steps):
                buf = jj % depth
                j = T.if_then_else(reverse != 0, last_j - jj, jj)
                slot = first + j
                plan = cp_plan[slot, hv]  # the same for every thread: the branches below are uniform
                if products and plan < 0:
                    for a, c in T.Parallel(BV, K):
                        sh_frag[a, c] = T.cast(s_frag[a, c], half)
                        sl_frag[a, c] = T.cast(s_frag[a, c] - T.cast(T.cast(s_frag[a, c], half), accum), half)
                T.copy(e_frag, s_frag)
                if e_global and jj + 1 < num_steps:  # the next step's E^T, its loads in flight under this step
                    for a, c in T.Parallel(BV, K):
                        e_frag[a, c] = cp_out[first + T.if_then_else(reverse != 0, j - 1, j + 1), hv, c, v0 + a]
                # waited on every path, as cp_correct.py's skip_warm does: a buffer is refilled only after its last
                # copy landed, so the barriers' phases do not depend on the plan
                if reload or jj < depth:
                    T.barrier_wait(bar_mh[buf], (jj // depth) % 2)
                    if load_ml:
                        T.barrier_wait(bar_ml[buf], (jj // depth) % 2)
                if products and plan < 0:
                    # S_{j+1}^T = E_j^T + S_j^T M_j^T as hi hi + lo hi + hi lo
                    T.wgmma_gemm(sh_frag, mh_s[buf, :, :], s_frag, transpose_B=True)
                    T.wgmma_gemm(sl_frag, mh_s[buf, :, :], s_frag, transpose_B=True)
                    T.wgmma_gemm(sh_frag, ml_s[buf, :, :], s_frag, transpose_B=True)
                if not e_global and jj + 1 < num_steps:  # the next step's E^T, under the products
                    if reload or jj + 1 < depth:
                        T.barrier_wait(bar_e[1 - buf], ((jj + 1) // 2) % 2)
                    for a, c in T.Parallel(BV, K):
                        e_frag[a, c] = e_s[1 - buf, c, a]
                T.wait_wgmma(0)
                if store == "direct":
                    store_state_t(cp_h0, slot + 1 - reverse, hv, v0, s_frag)
                # S_{j+1} to cp_h0 through out_s, once the step before's store (TMA, or the threads) has read it
                if store == "tma" and tx < 32:
                    T.tma_store_wait()
                if store not in ("direct", "final"):
                    T.sync_threads()
                if store in ("tma", "threads"):
                    for a, c in T.Parallel(BV, K):
                        out_s[c, a] = s_frag[a, c]
                # the threads' writes of out_s and reads of e_s ordered before the TMA's read and writes; buffer buf is
                # free (this step's products are waited; its E was read during the step before): the operands of step
                # jj + depth land there
                if fence:
                    T.fence_proxy_async()
                T.sync_threads()
                if store == "tma" and tx < 32:
                    T.tma_copy(out_s, cp_h0[slot + 1 - reverse, hv, 0:K, v0:v0 + BV], leader_scope_threads=32)
                if store == "threads":
                    T.copy(out_s, cp_h0[slot + 1 - reverse, hv, 0:K, v0:v0 + BV], disable_tma=True)
                if reload and jj + depth < num_steps:
                    fetch(cp_out, first + T.if_then_else(reverse != 0, last_j - jj - depth, jj + depth), hv, v0, buf,
                          mh_s, ml_s, e_s, bar_mh, bar_ml, bar_e, tx)
            if store == "final" and num_steps > 0:
                store_state_t(cp_h0, first + T.if_then_else(reverse != 0, last_j - num_steps + 1, num_steps), hv, v0,
                              s_frag)
            if store == "tma" and tx < 32:
                T.tma_store_wait()  # the last store has read out_s before the block's shared memory goes

    return gdn_cp_correct
