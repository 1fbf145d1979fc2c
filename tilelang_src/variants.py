"""The only instantiation table: every kernel the build compiles, one row per variant.

Everything that is not here is a run-time argument of the kernels (token count,
head counts, sequence count, scale, flags such as initial-state present or the
state layout). A row's `key` is what the op layer matches at run time.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Variant:
    arch: str  # nvcc arch tag: "sm_90a", "sm_100a", "sm_120a"
    kernel: str  # op-level kernel name; all variants of one kernel share a launcher signature
    module: str  # module under tilelang_src/
    factory: str  # function in that module returning the T.prim_func
    params: dict = field(default_factory=dict)  # factory keyword arguments
    key: tuple = ()  # (name, value) pairs the op layer dispatches on
    fast_math: bool = True  # TL_ENABLE_FAST_MATH and nvcc --use_fast_math

    @property
    def symbol(self) -> str:
        tags = "".join(f"_{k}{v}" for k, v in self.key)
        return f"flashqla_{self.kernel}_{self.arch.replace('_', '')}{tags}"


DTYPES = {"bf16": "bfloat16", "fp16": "float16"}

VARIANTS: list[Variant] = []
for _short, _dtype in DTYPES.items():
    VARIANTS.append(Variant(
        "sm_90a", "gdn_chunk_prep", "sm90.chunk_prep", "gdn_chunk_prep_sm90",
        params=dict(dtype=_dtype, K=128, BT=64), key=(("dtype", _short),)))
    VARIANTS.append(Variant(
        "sm_90a", "gdn_fwd", "sm90.gdn_fwd", "gdn_fwd_sm90",
        params=dict(dtype=_dtype, K=128, V=128, BT=64, BV=64), key=(("dtype", _short), ("bv", 64))))
    VARIANTS.append(Variant(
        "sm_90a", "gdn_bwd_dh", "sm90.gdn_bwd_dh", "gdn_bwd_dh_sm90",
        params=dict(dtype=_dtype, K=128, V=128, BT=64, BV=64), key=(("dtype", _short), ("bv", 64))))
    VARIANTS.append(Variant(
        "sm_90a", "gdn_bwd_chunk", "sm90.gdn_bwd_chunk", "gdn_bwd_chunk_sm90",
        params=dict(dtype=_dtype, K=128, V=128, BT=64), key=(("dtype", _short),)))

# dtype-independent helpers of the sequential kernels (segments, context parallelism)
VARIANTS.append(Variant("sm_90a", "gdn_seg_plan", "sm90.seg_plan", "gdn_seg_plan_sm90", params=dict(BT=64)))
VARIANTS.append(Variant(
    "sm_90a", "gdn_cp_correct", "sm90.cp_correct", "gdn_cp_correct_sm90",
    params=dict(K=128, V=128, BT=64, BV=64), key=(("bv", 64),)))
