"""The only instantiation table: every kernel the build can compile, one row per variant.

Everything that is not here is a run-time argument of the kernels (token count,
head counts, sequence count, scale, flags such as initial-state present or the
state layout). A row's `key` is what the op layer matches at run time.

Kernel families. A family is the set of programs written for one GPU generation; the op layer
runs the family named after the device's compute capability (9.0 -> sm90, 10.0 -> sm100,
12.0 -> sm120). Every family implements the same kernels with the same launcher signatures.

  sm90   tilelang_src/sm90/: warp specialized (TMA producer warps, wgmma consumer warpgroups,
         setmaxnreg), up to 186 KB of shared memory per block.
  sm100  the sm90 programs, lowered for sm_100a. TileLang 0.1.15 emits tcgen05 only for GEMMs
         whose accumulator lives in tensor memory (T.alloc_tmem) and wgmma only on Hopper, so
         every T.gemm of these programs becomes mma.sync m16n8k16; TMA, mbarriers and
         setmaxnreg stay. B200/GB200 allow 227 KB of shared memory per block, as Hopper does.
  sm120  tilelang_src/sm120/: one thread block without warp specialization, element loads,
         mma.sync, at most 99 KB of shared memory per block (consumer Blackwell's limit); the
         chunk prep is sm90/chunk_prep.py, which has nothing Hopper-specific.

Check variants. FLASHQLA_CHECK_FAMILIES="sm100;sm120" also lowers those families for sm_90a with
wgmma disabled: TileLang then emits the code it emits for sm_100a / sm_120a (mma.sync), compiled
for Hopper, so an H100/H200 can run them (FLASHQLA_KERNEL_FAMILY=sm120 selects them at run time).
"""

from __future__ import annotations

from dataclasses import dataclass, field

# the nvcc target of each family's GPUs; 'a' targets run on exactly that compute capability
FAMILY_ARCH = {"sm90": "sm_90a", "sm100": "sm_100a", "sm120": "sm_120a"}

# opt-in shared memory per block (dynamic + static), bytes: cudaDevAttrMaxSharedMemoryPerBlockOptin
SMEM_LIMIT = {"sm_90a": 232448, "sm_100a": 232448, "sm_120a": 101376}


@dataclass(frozen=True)
class Variant:
    arch: str  # nvcc arch tag: "sm_90a", "sm_100a", "sm_120a"
    family: str  # kernel family (see above): "sm90", "sm100", "sm120"
    kernel: str  # op-level kernel name; all variants of one kernel share a launcher signature
    module: str  # module under tilelang_src/
    factory: str  # function in that module returning the T.prim_func
    params: dict = field(default_factory=dict)  # factory keyword arguments
    key: tuple = ()  # (name, value) pairs the op layer dispatches on
    fast_math: bool = True  # TL_ENABLE_FAST_MATH and nvcc --use_fast_math

    @property
    def is_check(self) -> bool:
        """A family lowered for another arch than its own (sm_90a), to be checked on Hopper."""
        return FAMILY_ARCH[self.family] != self.arch

    @property
    def pass_configs(self) -> dict:
        configs = {"tl.enable_fast_math": bool(self.fast_math)}
        if self.family != "sm90":
            configs["tl.disable_wgmma"] = True  # only changes anything when lowering for sm_90a
        return configs

    @property
    def smem_limit(self) -> int:
        """Bytes of shared memory the kernel may use: the smaller limit of its arch and its family."""
        return min(SMEM_LIMIT[self.arch], SMEM_LIMIT[FAMILY_ARCH[self.family]])

    @property
    def symbol(self) -> str:
        tags = "".join(f"_{k}{v}" for k, v in self.key)
        family = f"_{self.family}" if self.is_check else ""
        return f"flashqla_{self.kernel}_{self.arch.replace('_', '')}{family}{tags}"


DTYPES = {"bf16": "bfloat16", "fp16": "float16"}

# kernel -> (module, factory, factory params besides dtype, key besides dtype), per family
_SM90_PROGRAMS = {
    # VPC_MAX: the most v-heads per CTA that csrc/ops/gdn_fwd.cpp's prep_heads_per_cta hands the prep (4)
    "gdn_chunk_prep": ("sm90.chunk_prep", "gdn_chunk_prep_sm90", dict(K=128, BT=64, VPC_MAX=4), ()),
    "gdn_fwd": ("sm90.gdn_fwd", "gdn_fwd_sm90", dict(K=128, V=128, BT=64, BV=64, stage_o=True), (("bv", 64),)),
    "gdn_bwd_dh": ("sm90.gdn_bwd_dh", "gdn_bwd_dh_sm90", dict(K=128, V=128, BT=64, BV=64), (("bv", 64),)),
    "gdn_bwd_chunk": ("sm90.gdn_bwd_chunk", "gdn_bwd_chunk_sm90", dict(K=128, V=128, BT=64), ()),
}
# the sm90 family's chunk prep (its measurements below, at PROGRAMS["sm90"])
_SM90_PREP_PARAMS = dict(K=128, BT=64, VPC_MAX=4, tma_stores=True, min_blocks=4, z_rs=True, tma_loads=True,
                         mma_level1=True, diag8=True)
PROGRAMS = {
    # the chunk gradient warp specialized (three warpgroups, setmaxnreg: wgmma-only); tiles stored beside shared-memory
    # work go by TMA (docs/fwd_profile.md's rule): the prep's A and Z, the forward storer's h, the state gradient's dh.
    # H200, ablate.py, same outputs bit for bit (benchmarks/results/H200_tma_stores.md): prep 624.5 -> 590.9 us at
    # (16, 64) 32768 tokens, 103.8 -> 91.7 at (2, 8); forward storing h 2.26 -> 2.05 us per chunk at BV = 128 (16, 64),
    # 1.41 -> 1.30 at BV = 64 (2, 8); state gradient 2.19 -> 2.11 at (2, 8). The prep at 4 CTAs per SM (128 registers,
    # no spills with the TMA stores): 577.4 -> 564.5 us at (16, 64), 216.2 -> 207.9 at (16, 16). Nineteenth session
    # (benchmarks/results/H200_prep_zld.md): the prep's Z by an RS wgmma and Q, K by TMA (z_rs, tma_loads) 566.4 ->
    # 543.6 us at (16, 64), 332.6 -> 307.3 at (16, 32), 214.1 -> 190.7 at (16, 16), 86.5 -> 83.6 at (2, 8); the chunk
    # gradient's dL from registers (dl_rs) 716.8 -> 681.2 us at (16, 64), 433.8 -> 416.3 at (16, 32), 132.4 -> 128.6 at
    # (2, 8). Twentieth session (benchmarks/results/H200_prep_inverse.md): the inverse's level-1 merge on per-warp TF32
    # mma.sync and its diagonal 16x16 blocks from 8x8 solves (mma_level1, diag8) 529.7 -> 453.0 us at (16, 64), 307.2 ->
    # 257.4 at (16, 32), 182.0 -> 160.6 at (16, 16), 92.0 -> 73.4 at (2, 8); A moves by at most one bf16 ulp.
    # Only measured on sm90: the other families keep element stores and 3 prep CTAs per SM
    "sm90": {**_SM90_PROGRAMS,
             "gdn_chunk_prep": ("sm90.chunk_prep", "gdn_chunk_prep_sm90", _SM90_PREP_PARAMS, ()),
             # Z formed by the forward itself (gdn_fwd.py z_in_kernel, with the prep's form_z=False: the two go
             # together, checked below) took 1.1-1.5x the forward's time (benchmarks/results/H200_z_in_kernel.md): off
             # the warm-up pass's transition rows (the long ones) launched first (fallback_first; H100, 41st session,
             # benchmarks/results/s41/README.md: with both on, the backward 0.989x its time by geomean over (4, 8),
             # (2, 4), (8, 16) x four mixes (0.976-1.003x), the forward 0.996x (0.966-1.019x, within the run's noise))
             "gdn_fwd": ("sm90.gdn_fwd", "gdn_fwd_sm90",
                         dict(K=128, V=128, BT=64, BV=64, stage_o=True, tma_h=True, fallback_first=True), (("bv", 64),)),
             "gdn_bwd_dh": ("sm90.gdn_bwd_dh", "gdn_bwd_dh_sm90",
                            dict(K=128, V=128, BT=64, BV=64, tma_dh=True, fallback_first=True), (("bv", 64),)),
             # row_pad 8 (the fp32 C x C buffer's fragment stores conflict-free): 0.987x the time at (16, 64), 0.990x
             # at (16, 32), 1.000x at (2, 8) (ablate.py, 16384 tokens, benchmarks/results/H200_row_pad.md); the gmax 2
             # row keeps 4 (1.011x, 0.987x, 1.002x: noise)
             "gdn_bwd_chunk": ("sm90.gdn_bwd_chunk_ws", "gdn_bwd_chunk_ws_sm90",
                               dict(K=128, V=128, BT=64, dl_rs=True, row_pad=8), ())},
    # the sm90 programs; the chunk gradient without batched reductions (TileLang 0.1.15 leaves the batch's
    # pack buffer undefined when it lowers them for sm_100a)
    "sm100": {**_SM90_PROGRAMS,
              "gdn_bwd_chunk": ("sm90.gdn_bwd_chunk", "gdn_bwd_chunk_sm90",
                                dict(K=128, V=128, BT=64, reduce_batch=1), ())},
    "sm120": {
        "gdn_chunk_prep": _SM90_PROGRAMS["gdn_chunk_prep"],
        "gdn_fwd": ("sm120.gdn_fwd", "gdn_fwd_sm120", dict(K=128, V=128, BT=64, BV=64), (("bv", 64),)),
        "gdn_bwd_dh": ("sm120.gdn_bwd_dh", "gdn_bwd_dh_sm120", dict(K=128, V=128, BT=64, BV=64), (("bv", 64),)),
        "gdn_bwd_chunk": ("sm120.gdn_bwd_chunk", "gdn_bwd_chunk_sm120", dict(K=128, V=128, BT=64, BV=32), ()),
    },
}


# dtype-independent kernels of the sequential passes (segments, context parallelism); no wgmma-specific
# code: the same programs serve every family (their GEMMs become mma.sync off Hopper), with the parameters below
_HELPER_PROGRAMS = {
    "gdn_seg_plan": ("sm90.seg_plan", "gdn_seg_plan_sm90", dict(BT=64), ()),
    # each chunk's summed decay from the raw gates, for the segment plan of a forward without the chunk prep
    "gdn_chunk_decay": ("sm90.chunk_decay", "gdn_chunk_decay_sm90", dict(BT=64), ()),
    "gdn_cp_correct": ("sm90.cp_correct", "gdn_cp_correct_sm90", dict(K=128, V=128, BT=64, BV=64), (("bv", 64),)),
}
# per family where they differ: the sm120 family's blocks get at most 99 KB of shared memory, so its correction
# walk loads each step's M and E itself (the prefetch buffers take 96 KB more)
HELPER_PROGRAMS = {
    # the sm90 family's walk prefetches M and E by TMA (H200: 4.48 -> 4.21 us per step,
    # benchmarks/results/H200_streams.md); the sm100 family keeps cp.async until a run there measures it
    "sm90": {**_HELPER_PROGRAMS,
             "gdn_cp_correct": ("sm90.cp_correct", "gdn_cp_correct_sm90", dict(K=128, V=128, BT=64, BV=64, tma=True),
                                (("bv", 64),)),
             # the walk's outputs by a log-depth scan (FLASHQLA_CP_SCAN=1, csrc/ops/gdn_common.cpp correct_segments;
             # off: written in the 38th session, not yet run on a GPU); the sm90 family only (96 KB of shared memory)
             "gdn_cp_scan": ("sm90.cp_scan", "gdn_cp_scan_sm90", dict(K=128, V=128, BT=64, BV=64), (("bv", 64),))},
    "sm100": _HELPER_PROGRAMS,
    "sm120": {**_HELPER_PROGRAMS,
              "gdn_cp_correct": ("sm90.cp_correct", "gdn_cp_correct_sm90",
                                 dict(K=128, V=128, BT=64, BV=64, prefetch=False), (("bv", 64),))},
}

# further helper variants of a family, as (kernel, module, factory, params, key): the sm90 walk with a 32-wide V slice
# (four CTAs per head and sequence, half the products each; the default walk where it is built, FLASHQLA_WALK_BV=64 the
# 64-wide one, gdn_common.cpp). walk_bench.py on an H100 (41st session): 3.30 us per step against 4.24 at BV = 64; in
# the op (42nd session) the backward 0.987x and the forward 0.977x the 64-wide walk's time by geomean
# The same walk loading the transition matrices already split into bf16 high and low parts (split_m: no split of M's
# 128 x 128 fp32 per step; the warm-up pass stores them so when the host launches it with warmup = 2):
# the default since the 43rd session (FLASHQLA_WALK_SPLIT_M=0 the plain walk): on an H100 the backward 0.979x and the
# forward 0.978x the plain walk's time by geomean (benchmarks/results/s43/README.md). M fetched two steps ahead
# (m_depth = 3) measured no faster (46th session, H200: walk 2.42 against 2.43 us per step, the backward 1.000x)
EXTRA_HELPER_PROGRAMS = {
    "sm90": [("gdn_cp_correct", "sm90.cp_correct", "gdn_cp_correct_sm90", dict(K=128, V=128, BT=64, BV=32, tma=True),
              (("bv", 32),)),
             ("gdn_cp_correct", "sm90.cp_correct", "gdn_cp_correct_sm90",
              dict(K=128, V=128, BT=64, BV=32, tma=True, split_m=True), (("bv", 32), ("split_m", 1))),
             # the 64-wide walk on split transitions with S^T in registers (FLASHQLA_WALK_BV=64 takes it unless
             # FLASHQLA_WALK_SPLIT_M=0; written in the 44th session). Its e_global and store options measured slower
             # in the 45th session (benchmarks/results/s45/README.md): built with neither
             ("gdn_cp_correct", "sm90.cp_correct_rs", "gdn_cp_correct_rs_sm90", dict(K=128, V=128, BT=64, BV=64),
              (("bv", 64), ("split_m", 1))),
             # the scan (FLASHQLA_CP_SCAN=1) on A kept split, its operands by TMA all at once (the one that runs with
             # the scan unless FLASHQLA_WALK_SPLIT_M=0; written in the 44th session)
             ("gdn_cp_scan", "sm90.cp_scan_split", "gdn_cp_scan_split_sm90", dict(K=128, V=128, BT=64, BV=64),
              (("bv", 64), ("split_m", 1)))],
}


# further variants of a kernel in one family, as (kernel, module, factory, params, key): the op layer picks one
# by its key at run time
EXTRA_PROGRAMS = {
    # the fused forward with a 128-wide V slice (one CTA per head and segment), chosen per call where the
    # heads and sequences fill the SMs (plan_fwd, csrc/ops/segment_plan.cpp; FLASHQLA_FWD_BLOCK_V forces it); o of a
    # full chunk stored by TMA from W's stage (stage_o), h by TMA (tma_h)
    # Z for O += Z W read from the ring's stage (z_from_ring; H200, ablate.py, one 8192-token sequence, o bitwise the
    # same: 0.963x the time per chunk at (128, 128), 0.991x at (32, 32); at BV = 64 0.969x at (32, 32) but 1.039x at
    # (128, 128), so not there; benchmarks/results/H200_z_from_ring.md). In the op (8146fb7's wheel): the forward at
    # four and eight sequences 0.963-0.998x its time (0.980x by geomean over eight shapes), the rest unchanged
    "sm90": [("gdn_fwd", "sm90.gdn_fwd", "gdn_fwd_sm90",
              dict(K=128, V=128, BT=64, BV=128, stage_o=True, tma_h=True, z_from_ring=True, fallback_first=True),
              (("bv", 128),)),
             # the fused forward with a 32-wide V slice (four CTAs per head and segment): plan_fwd takes it where one
             # segment per sequence leaves half the SMs idle at BV = 64 (19 of the 171 forward shapes, e.g. (32, 32)
             # 1x8192: 64 CTAs), except for the backward's state recompute; FLASHQLA_FWD_BLOCK_V=32 forces it. The
             # chain's products per chunk are half as wide. 47th session, H100 (benchmarks/results/s47/README.md): the
             # kernel 0.81-0.88x the 64-wide one's time per chunk (ablate.py, o bitwise equal), the op's forward
             # 0.865-0.941x at 13 such shapes. The BV = 64 row's options
             ("gdn_fwd", "sm90.gdn_fwd", "gdn_fwd_sm90",
              dict(K=128, V=128, BT=64, BV=32, stage_o=True, tma_h=True, fallback_first=True), (("bv", 32),)),
             # the chunk gradient for two v-heads per qk-head (gmax 2: csrc/ops/gdn_bwd.cpp picks the smallest gmax at
             # least the group; one v-head takes gmax 1 below), its registers split 240 / 224 / 40 instead of
             # 256 / 224 / 24: with one or two v-heads per CTA the producer warps' loads of each CTA's first v-head are
             # exposed, and at 24 registers they spill.
             # H200, ablate.py --rounds 7 (interleaved), 16384 tokens, every output bitwise equal
             # (benchmarks/results/H200_bwdc_regs.md): 0.930x the default's time at (32, 32), 0.94x at (16, 16),
             # 0.977x at (16, 32); at four v-heads 0.995x at (2, 8) but 1.093x at (16, 64), so not the default.
             # <S0, dS1> by two tensor-core products (hs_gemm): 0.989x at (16, 32), 16384 tokens (ablate.py --rounds 5,
             # benchmarks/results/H200_hs_gemm.md; dg within 4e-6 of the fold's); at four v-heads 0.999-1.008x (noise)
             ("gdn_bwd_chunk", "sm90.gdn_bwd_chunk_ws", "gdn_bwd_chunk_ws_sm90",
              dict(K=128, V=128, BT=64, dl_rs=True, regs=(240, 224, 40), hs_gemm=True), (("gmax", 2),)),
             # the chunk gradient for one v-head per qk-head (gmax 1): every CTA is its first v-head, and loading dS1
             # and dO after Q and K (prio_loads) takes them out of the CTA's first memory burst; the default register
             # split. H200, ablate.py --rounds 5, 16384 tokens, every output bitwise equal
             # (benchmarks/results/H200_bwdc_prio.md): 0.907x the default's time at (16, 16), 0.891x at (32, 32),
             # where the gmax 2 variant takes 0.942x, 0.938x; at two v-heads 1.014x (16, 32), so not there
             ("gdn_bwd_chunk", "sm90.gdn_bwd_chunk_ws", "gdn_bwd_chunk_ws_sm90",
              dict(K=128, V=128, BT=64, dl_rs=True, prio_loads=True), (("gmax", 1),)),
             # the fused backward (the state gradient inside the chunk gradient, one CTA per segment and v-head) for
             # one v-head per qk-head: csrc/ops/gdn_bwd.cpp runs it instead of the state-gradient main pass and the
             # chunk gradient (FLASHQLA_FUSED_BWD=0 keeps those). H200 (benchmarks/fused_bwd_check.py,
             # H200_fused_bwd_dl.log): the kernel 0.72x the pair's time at (32, 32) 8192x4, 0.64x at 1024x8; in the op,
             # with its own segment plan, the backward 0.69-0.92x, the training step 0.75-0.95x (H200_fused_bwd.md).
             # WK's <S0, dS~> by two tensor-core products (hs_gemm): 0.978x / 0.982x the default's time at (32, 32)
             # 8192x4 / 1024x8, 0.985x at (16, 16) 1024x8 (fused_bwd_check.py, benchmarks/results/H200_hs_gemm.md)
             # Its fp32 C x C buffer's rows padded by 8 floats (row_pad: fragment stores conflict-free): 1.000x /
             # 0.989x the time at (32, 32) 8192x4 / 1024x8, 0.996x / 0.995x at (16, 16) (fused_bwd_check.py,
             # benchmarks/results/H200_row_pad.md)
             # dQ's state part formed in dQ's own accumulator and dP K accumulated onto it (dq_fold: WA's loop spilled
             # 84 words and stored 39 per chunk, now none), and 8 of WA's registers given to WK (WK's spills per chunk
             # 54 / 43 -> 36 / 26): H100, fused_bwd_check.py, (32, 32) 1690 -> 1586 us at 8192x4, 494 -> 453 at
             # 1024x8; dq within 1.7e-3 of the pair's largest (was bit-equal: the same products added in another
             # order), the other outputs unchanged (35th session, benchmarks/results/s35/README.md)
             ("gdn_bwd_fused", "sm90.gdn_bwd_fused", "gdn_bwd_fused_sm90",
              dict(K=128, V=128, BT=64, dl_in_wk=True, hold_gamma=True, hs_gemm=True, row_pad=8, dq_fold=True,
                   regs=(160, 168, 160, 24)), (("gmax", 1),)),
             # two, three and four v-heads per qk-head (gmax G, exactly: the cluster is the group): the same kernel
             # with dq and dk summed over a cluster of the group's G CTAs through distributed shared memory
             # (cluster_sum; rank 0 stores dq, rank G - 1 dk). csrc/ops/gdn_bwd.cpp runs it by default at G = 2 (H100,
             # the backward at (16, 32) 0.98-1.32x the two passes' speed, the step 1.04-1.24x), at 3 and 4 only where
             # FLASHQLA_FUSED_GROUPS=1 (the step 0.66-0.93x there; 37th session, benchmarks/results/s37/README.md)
             *[("gdn_bwd_fused", "sm90.gdn_bwd_fused", "gdn_bwd_fused_sm90",
                dict(K=128, V=128, BT=64, dl_in_wk=True, hold_gamma=True, hs_gemm=True, row_pad=8, dq_fold=True,
                     regs=(160, 168, 160, 24), group=group, cluster_sum=True), (("gmax", group),))
               for group in (2, 3, 4)],
             # the forward with the state as the register operand (S^T in one or two math warpgroups, no shared-memory
             # round trip and no barrier between warpgroups on the chain; docs/fwd_rs.md): its own launcher table, the
             # forward's main pass where FLASHQLA_FWD_RS=1 (csrc/ops/dispatch.h fwd_rs_requested). Registers at BV =
             # 128 208 / 64 / 32 (at 200 for the math warpgroups ptxas serializes every wgmma, C7512; at 56 for X's
             # likewise, C7511); at 64 208 / 128 / 128 (384 threads: at most 504 in all). The ring's K, V, A and gates
             # freed once W^T is formed (early_release): H100, ablate.py, 8192 tokens, us per chunk (thirtieth session,
             # benchmarks/results/s30/README.md): BV = 64 2.84 -> 1.75 at (32, 32) (the default kernel 1.90), 7.23 ->
             # 4.41 at (128, 128) (4.50); BV = 128 3.16 -> 2.42 (2.44), 4.51 -> 4.28 (3.78). In the op at BV = 64 the
             # forward's time is unchanged (geomean 1.000x over twelve shapes): off
             ("gdn_fwd_rs", "sm90.gdn_fwd_rs", "gdn_fwd_rs_sm90",
              dict(K=128, V=128, BT=64, BV=128, regs=(208, 64, 32), early_release=True), (("bv", 128),)),
             ("gdn_fwd_rs", "sm90.gdn_fwd_rs", "gdn_fwd_rs_sm90",
              dict(K=128, V=128, BT=64, BV=64, regs=(208, 128, 128), early_release=True), (("bv", 64),)),
             # the forward without the chunk prep (the inverse and the gates in an auxiliary warpgroup, P = Q K^T
             # gated by each math warpgroup: p_in_math; docs/fwd_noprep.md): flashqla::gdn_prefill's kernel where the
             # plan has one segment per sequence at BV = 128 (at any group of v-heads since the 36th session), unless
             # FLASHQLA_FWD_NOPREP=0 (csrc/ops/gdn_fwd.cpp noprep_plan). Registers 192 / 104 / 24 (the math
             # warpgroups at 192 need sk_halves; the solve needs 104). H100, noprep_check.py, (32, 32) 8192x4: 0.678
             # ms against 0.871 with P in the auxiliary warpgroup; the op's forward (chunk prep + fused forward) 0.824
             # in CUDA-graph timing.
             # K's ring of three stages (k_stages) and the auxiliary stage freed early (x_free_early): 32nd session,
             # H100, the op in CUDA-graph timing 0.671-0.682 -> 0.645-0.649 ms at (32, 32) 8192x4 (k_stages), then
             # noprep_check 0.666 -> 0.661 (8192x4), 0.680 -> 0.656 (4096x8), 0.632 -> 0.611 (8192x1). 33rd session,
             # H100, noprep_check (benchmarks/results/s33): P's columns split between the math warpgroups (p_split)
             # 0.659 -> 0.589 at 8192x4, 0.660 -> 0.611 at 4096x8, 0.618 -> 0.579 at 8192x1 (o bitwise equal); the
             # gates in log2 units (log2_gates) 0.631 / 0.645 / 0.623; the solve's shuffles (solve_shfl, bitwise
             # equal) 0.652 / 0.657 / 0.624; all of them with l2_shfl 0.581 / 0.606 / 0.572. The three shipped
             # together, another call: 0.693 -> 0.613 at 8192x4 (l2_shfl, mended, no faster: off). 34th session,
             # H100, noprep_check: M's and G's 0/1 masks dropped (m_nomask, g_nomask: ptxas hoisted the masks out of
             # the auxiliary warpgroup's loop and spilled around them; 23 spill reloads per chunk -> 1 with l2_shfl),
             # o and the final state bitwise equal: 0.594 -> 0.567 at 8192x4, 0.607 -> 0.572 at 4096x8, 0.173 ->
             # 0.169 at 2048x4, 0.557 -> 0.481 at 8192x1 (m_nomask alone 0.575 / 0.578 / 0.170 / 0.487). 35th session,
             # H100: both math warpgroups on one code path (math_pair: 12,560 -> 10,376 SASS instructions; instruction
             # fetch was the stall common to every role), o and the final state bitwise equal in the op at seven
             # shapes (context parallelism and partial chunks among them); the op's forward (CUDA graphs) 0.556 ->
             # 0.521 ms at 8192x4, 0.550 -> 0.535 at 4096x8, 0.165 -> 0.154 at 2048x4, 0.185 -> 0.182 at 1024x8
             ("gdn_fwd_noprep", "sm90.gdn_fwd_noprep", "gdn_fwd_noprep_sm90",
              dict(K=128, V=128, BT=64, BV=128, regs=(192, 104, 24), sk_halves=True, p_in_math=True, k_stages=3,
                   x_free_early=True, p_split=True, log2_gates=True, solve_shfl=True, l2_shfl=True, m_nomask=True,
                   g_nomask=True, math_pair=True),
              (("bv", 128),)),
             # the chunk prep without Z (Q neither loaded nor multiplied): g_cumsum and A only, what the backward
             # reads of a training forward whose o the prep-free kernel forms (FLASHQLA_TRAIN_NOPREP=1,
             # csrc/ops/gdn_fwd.cpp). The sm90 prep row's parameters but form_z, so A and g_cumsum are its bits
             ("gdn_chunk_prep_a", "sm90.chunk_prep", "gdn_chunk_prep_sm90",
              dict(_SM90_PREP_PARAMS, form_z=False), ())],
}


# families whose kernels use programmatic dependent launch (tilelang_src/common/grid_dependency.py): every kernel
# waits for the one before it at its top, so each may start while that one finishes (FLASHQLA_PDL=0 turns the launch
# attribute off at run time). None: built for the sm90 family, lowered and audited (scripts/pdl_audit.py) for all its
# kernels, correct (tests/test_pdl_gpu.py), but on an H100 (one process per run, flashqla alone; benchmarks/results/
# s29/README.md) the forward took 0.990-1.009x its time without it at (32, 32) and (16, 16), 1x8192 to 8192x4, and the
# training step 1.021-1.023x at (16, 16): no gain. With it off the kernels' lowered code is the same as before
PDL_FAMILIES: tuple[str, ...] = ()


def _family_variants(family: str, arch: str) -> list[Variant]:
    rows = []
    pdl = dict(pdl=True) if family in PDL_FAMILIES else {}
    programs = [(kernel, *spec) for kernel, spec in PROGRAMS[family].items()] + EXTRA_PROGRAMS.get(family, [])
    # a family's prep stores Z exactly when none of its forwards forms Z itself (the op runs one prep and one forward)
    forms_z = {params.get("z_in_kernel", False) for kernel, _, _, params, _ in programs if kernel == "gdn_fwd"}
    prep_z = PROGRAMS[family]["gdn_chunk_prep"][2].get("form_z", True)
    assert forms_z == {not prep_z}, f"{family}: the forwards' z_in_kernel {forms_z} against the prep's form_z {prep_z}"
    for short, dtype in DTYPES.items():
        for kernel, module, factory, params, key in programs:
            rows.append(Variant(arch, family, kernel, module, factory, params=dict(dtype=dtype, **params, **pdl),
                                key=(("dtype", short),) + key))
    helpers = [(kernel, *spec) for kernel, spec in HELPER_PROGRAMS[family].items()]
    for kernel, module, factory, params, key in helpers + EXTRA_HELPER_PROGRAMS.get(family, []):
        rows.append(Variant(arch, family, kernel, module, factory, params=dict(params, **pdl), key=key))
    return rows


# every family for its own arch, then the check variants (sm100, sm120 for sm_90a)
VARIANTS: list[Variant] = [v for fam, arch in FAMILY_ARCH.items() for v in _family_variants(fam, arch)]
VARIANTS += [v for fam in ("sm100", "sm120") for v in _family_variants(fam, "sm_90a")]


def select(archs: list[str], check_families: list[str]) -> list[Variant]:
    """The rows a build compiles: every family whose arch is requested, and the check variants of
    the families named in check_families."""
    return [v for v in VARIANTS
            if (not v.is_check and v.arch in archs) or (v.is_check and v.family in check_families)]
