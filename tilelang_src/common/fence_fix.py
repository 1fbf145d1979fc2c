"""A rewrite of TileLang's generated CUDA (registered with tilelang.engine.register_cuda_postproc by
scripts/codegen.py and benchmarks/ablate.py): TileLang 0.1.15 fences the accumulator of a wgmma whose fragment
spans two warpgroups (a 256-thread product split by rows, gdn_fwd_noprep.py's math_pair) as if one warpgroup held
the whole fragment, `tl::warpgroup_fence_operand(reinterpret_cast<float*>(acc + 0), 2 n)` over a `float acc[n]`:
twice the array, out of bounds (docs/fwd_rs.md). clamp_fences rewrites such a count to the array's length in 4-byte
registers (the fence is a compiler barrier on each register it names; past the array it names none of the
fragment's). A name declared with two lengths is left alone, and no count within its array changes, so code without
the pattern comes out byte-identical."""

import re
import sys

DECL = re.compile(r"^\s*(float|uint32_t|bfloat16_t|half_t)\s+(\w+)\[(\d+)\];", re.M)
FENCE = re.compile(r"tl::warpgroup_fence_operand\(reinterpret_cast<(float|uint32_t)\*>\((\w+) \+ 0\), (\d+)\)")
BYTES = {"float": 4, "uint32_t": 4, "bfloat16_t": 2, "half_t": 2}


def clamp_fences(code: str) -> str:
    words: dict[str, set[int]] = {}  # array -> its length in 4-byte registers, per declaration
    for ty, name, n in DECL.findall(code):
        words.setdefault(name, set()).add(int(n) * BYTES[ty] // 4)

    def clamp(m: re.Match) -> str:
        ty, name, n = m.groups()
        lengths = words.get(name, set())
        if len(lengths) != 1 or int(n) <= min(lengths):
            return m.group(0)
        return f"tl::warpgroup_fence_operand(reinterpret_cast<{ty}*>({name} + 0), {min(lengths)})"

    return FENCE.sub(clamp, code)


def postproc(code: str, target=None) -> str:
    """register_cuda_postproc's signature; says on stderr when it rewrote anything"""
    fixed = clamp_fences(code)
    if fixed != code:
        n = sum(a != b for a, b in zip(code.splitlines(), fixed.splitlines()))
        print(f"fence_fix: {n} register fences clamped to their fragments", file=sys.stderr)
    return fixed


def register() -> None:
    """Apply postproc to every CUDA source TileLang generates from here on (lowering and JIT alike)."""
    from tilelang.engine import register_cuda_postproc

    register_cuda_postproc(postproc)
