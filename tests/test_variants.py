"""The instantiation table (tilelang_src/variants.py), read from a source checkout: every kernel
family implements the same kernels with the same keys, symbols are unique, check variants exist only
for sm_90a and lower with wgmma disabled. Skipped where the tests run without the sources."""

from __future__ import annotations

import pytest

from source_variants import load_variants

variants = load_variants()
if variants is None:
    pytest.skip("tilelang_src/ is not next to tests/ (tests copied out of a checkout)", allow_module_level=True)


def extra_keys(family: str) -> set:
    """(kernel, key) of a family's further variants (EXTRA_PROGRAMS), in every dtype."""
    return ({(kernel, (("dtype", short),) + key) for kernel, _, _, _, key in variants.EXTRA_PROGRAMS.get(family, [])
             for short in variants.DTYPES}
            | {(kernel, key) for kernel, _, _, _, key in variants.EXTRA_HELPER_PROGRAMS.get(family, [])})


# helper programs (dtype-free) that only some families have; the op layer uses them where the build has them
OPTIONAL_HELPERS = {"gdn_cp_scan"}


def test_every_family_has_the_same_kernels_and_keys():
    table, extras, helpers = {}, {}, {}
    for v in variants.VARIANTS:
        into = (extras if (v.kernel, v.key) in extra_keys(v.family)
                else helpers if v.kernel in OPTIONAL_HELPERS else table)
        into.setdefault((v.family, v.arch), set()).add((v.kernel, v.key))
    # the correction's scan (FLASHQLA_CP_SCAN): the sm90 family only, its 96 KB of shared memory past sm120's blocks
    assert {fam for fam, _ in helpers} == {"sm90"}, helpers
    assert helpers[("sm90", "sm_90a")] == {("gdn_cp_scan", (("bv", 64),))}
    rows = list(table.values())
    assert all(r == rows[0] for r in rows), table
    assert {k for k, _ in rows[0]} == {"gdn_chunk_prep", "gdn_fwd", "gdn_bwd_dh", "gdn_bwd_chunk", "gdn_seg_plan",
                                       "gdn_cp_correct", "gdn_chunk_decay"}
    # a further variant is another key of a kernel every family has (the op layer falls back to the common one), or
    # of a kernel only some families have, which the op layer uses where the build has it (FLASHQLA_HAS_<KERNEL>, from
    # codegen.py's registry header) and replaces by common kernels elsewhere
    optional = {"gdn_bwd_fused", "gdn_fwd_rs", "gdn_fwd_noprep", "gdn_chunk_prep_a"} | OPTIONAL_HELPERS
    for (family, _), more in extras.items():
        assert {k for k, _ in more} <= {k for k, _ in rows[0]} | optional and not more & rows[0], (family, more)
    for gmax in (1, 2, 3, 4):  # one v-head per qk-head, and the cluster variants (gdn_bwd.cpp takes gmax == HV / H)
        assert ("gdn_bwd_fused", (("dtype", "bf16"), ("gmax", gmax))) in extras[("sm90", "sm_90a")]
    for bv in (64, 128):  # the register-operand forward at both widths (csrc/ops/gdn_common.cpp matches the plan's)
        assert ("gdn_fwd_rs", (("dtype", "bf16"), ("bv", bv))) in extras[("sm90", "sm_90a")]
    assert ("gdn_fwd_noprep", (("dtype", "bf16"), ("bv", 128))) in extras[("sm90", "sm_90a")]
    assert ("gdn_chunk_prep_a", (("dtype", "bf16"),)) in extras[("sm90", "sm_90a")]
    # the correction walk's 32-wide slice (the default; gdn_common.cpp takes the 64-wide walk where it is absent)
    assert ("gdn_cp_correct", (("bv", 32),)) in extras[("sm90", "sm_90a")]
    # and its variant that loads the transitions split (the default, FLASHQLA_WALK_SPLIT_M=0 the plain walk;
    # gdn_common.cpp choose_correction)
    assert ("gdn_cp_correct", (("bv", 32), ("split_m", 1))) in extras[("sm90", "sm_90a")]
    # the 64-wide walk on split transitions with the state in registers (FLASHQLA_WALK_BV=64, cp_correct_rs.py)
    assert ("gdn_cp_correct", (("bv", 64), ("split_m", 1))) in extras[("sm90", "sm_90a")]
    # the scan's variant on split A (FLASHQLA_CP_SCAN=1 with split transitions, the default of FLASHQLA_WALK_SPLIT_M)
    assert ("gdn_cp_scan", (("bv", 64), ("split_m", 1))) in extras[("sm90", "sm_90a")]
    assert not any(k in optional for (family, _), more in extras.items() if family != "sm90" for k, _ in more)
    assert ("gdn_fwd", (("dtype", "bf16"), ("bv", 128))) in extras[("sm90", "sm_90a")]
    for gmax in (1, 2):
        assert ("gdn_bwd_chunk", (("dtype", "bf16"), ("gmax", gmax))) in extras[("sm90", "sm_90a")]


def test_keys_are_the_dispatch_fields():
    """codegen.py writes a variant's key into the fields dtype, bv, gmax and split_m of its table row
    (csrc/ops/dispatch.h matches those): a key of another name would be dropped and its variant shadow the default"""
    assert {name for v in variants.VARIANTS for name, _ in v.key} <= {"dtype", "bv", "gmax", "split_m"}


def test_symbols_are_unique():
    symbols = [v.symbol for v in variants.VARIANTS]
    assert len(symbols) == len(set(symbols))


def test_check_variants_are_sm90a_without_wgmma():
    checks = [v for v in variants.VARIANTS if v.is_check]
    assert checks and {v.arch for v in checks} == {"sm_90a"} and {v.family for v in checks} == {"sm100", "sm120"}
    assert all(v.pass_configs.get("tl.disable_wgmma") for v in checks)
    assert all(v.smem_limit == variants.SMEM_LIMIT[variants.FAMILY_ARCH[v.family]] for v in checks)


def test_selection():
    release = variants.select(["sm_90a", "sm_100a", "sm_120a"], [])
    assert {(v.family, v.arch) for v in release} == {("sm90", "sm_90a"), ("sm100", "sm_100a"), ("sm120", "sm_120a")}
    check = variants.select(["sm_90a"], ["sm120"])
    assert {(v.family, v.arch) for v in check} == {("sm90", "sm_90a"), ("sm120", "sm_90a")}
    assert not any(v.pass_configs.get("tl.disable_wgmma") for v in check if v.family == "sm90")


def test_prep_without_z_is_the_prep_but_z():
    """gdn_chunk_prep_a (FLASHQLA_TRAIN_NOPREP's prep) is the sm90 prep row but form_z: its g_cumsum and A are the
    prep's bits (tests/test_train_noprep_gpu.py checks them on the GPU)"""
    rows = {v.kernel: v for v in variants.VARIANTS
            if v.family == "sm90" and not v.is_check and v.key == (("dtype", "bf16"),)}
    full, without_z = rows["gdn_chunk_prep"], rows["gdn_chunk_prep_a"]
    assert (without_z.module, without_z.factory) == (full.module, full.factory)
    assert without_z.params == {**full.params, "form_z": False} and full.params.get("form_z", True)
