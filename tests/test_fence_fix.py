"""common/fence_fix.py: the rewrite of TileLang's generated CUDA that clamps a register fence over twice its fragment
(a two-warpgroup product's accumulator) to the fragment's length, and leaves every other fence alone."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tilelang_src"))
from common.fence_fix import clamp_fences  # noqa: E402

SOURCE = """
  float acc[32];
  bfloat16_t a_op[64];
  float kept[16];
        tl::warpgroup_fence_operand(reinterpret_cast<uint32_t*>(a_op + 0), 32);
        tl::warpgroup_fence_operand(reinterpret_cast<float*>(acc + 0), 64);
        tl::warpgroup_fence_operand(reinterpret_cast<float*>(kept + 0), 16);
        tl::warpgroup_fence_operand(reinterpret_cast<float*>(other + 0), 64);
"""


def test_a_fence_over_twice_its_fragment_is_clamped():
    fixed = clamp_fences(SOURCE)
    assert "reinterpret_cast<float*>(acc + 0), 32);" in fixed
    assert "reinterpret_cast<float*>(acc + 0), 64);" not in fixed


def test_fences_within_their_fragments_and_undeclared_names_stay():
    fixed = clamp_fences(SOURCE)
    # a bf16 operand of 64 elements is 32 four-byte registers: its fence of 32 is within it
    assert "reinterpret_cast<uint32_t*>(a_op + 0), 32);" in fixed
    assert "reinterpret_cast<float*>(kept + 0), 16);" in fixed
    assert "reinterpret_cast<float*>(other + 0), 64);" in fixed
    assert clamp_fences(fixed) == fixed
    no_pattern = SOURCE.replace("(acc + 0), 64)", "(acc + 0), 32)")
    assert clamp_fences(no_pattern) == no_pattern


def test_a_name_declared_with_two_lengths_is_left_alone():
    twice = SOURCE + "  float acc[16];\n"
    assert clamp_fences(twice) == twice
