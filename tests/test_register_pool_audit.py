"""The register-pool audit (scripts/register_pool_audit.py, run by codegen at build time): a warp-specialized
kernel's setmaxnreg values must fit the registers its CTA is launched with (hand-written snippets in TileLang's
output style; the first case is the split that hung on the H200)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from register_pool_audit import register_pool  # noqa: E402


def kernel(threads: int, *values: int) -> str:
    """A kernel in TileLang 0.1.15's output style: one branch per warpgroup, the last one deallocating."""
    branches = [f"  if (((int)threadIdx.x) < {128 * (i + 1)}) {{\n    tl::warpgroup_reg_alloc<{v}>();\n  }}"
                for i, v in enumerate(values[:-1])]
    branches.append(f"  else {{\n    tl::warpgroup_reg_dealloc<{values[-1]}>();\n  }}")
    return f'extern "C" __global__ void __launch_bounds__({threads}, 1) k() {{\n' + "\n".join(branches) + "\n}\n"


def test_split_over_the_pool_is_a_violation():
    got = register_pool(kernel(384, 240, 232, 40))  # 512 > 3 x 168
    assert got["budget"] == 504 and got["total"] == 512
    assert got["violation"] and "504" in got["violation"]


def test_splits_that_fit_pass():
    assert register_pool(kernel(384, 240, 224, 40))["violation"] is None  # exactly 3 x 168
    assert register_pool(kernel(384, 248, 232, 24))["violation"] is None
    assert register_pool(kernel(512, 168, 160, 144, 40))["violation"] is None  # gdn_bwd_dh: 4 x 128
    assert register_pool(kernel(512, 168, 160, 152, 40))["violation"] is not None  # one step over


def test_kernels_without_setmaxnreg_pass():
    src = 'extern "C" __global__ void __launch_bounds__(256, 1) k() {\n  __syncthreads();\n}\n'
    got = register_pool(src)
    assert got["violation"] is None and got["note"] == "no setmaxnreg"


def test_a_count_other_than_the_warpgroups_is_not_summed():
    src = kernel(384, 240, 232, 40).replace("tl::warpgroup_reg_dealloc<40>();", "")
    got = register_pool(src)
    assert got["violation"] is None and "not summed" in got["note"]
