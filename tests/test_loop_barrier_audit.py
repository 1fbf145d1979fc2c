"""The loop-barrier audit (scripts/loop_barrier_audit.py, run by codegen at build time): it finds a barrier
inside an unrolled loop of generated CUDA and leaves the pipelines' own barriers alone (hand-written
snippets in TileLang's output style), and the installed build manifest records its findings per kernel."""

from __future__ import annotations

import sys
from pathlib import Path

import flashqla

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from loop_barrier_audit import loop_barriers  # noqa: E402

# the shapes of TileLang 0.1.15's output: a chunk loop (variable bound), unrolled fragment loops inside it
GENERATED = """\
extern "C" __global__ void __launch_bounds__(512, 1) k(int n_iter) {
  for (int i_13 = 0; i_13 < n_iter; ++i_13) {
    full[(i_13 & 1)].wait(((i_13 & 3) >> 1));
    tl::__sync_thread_partial(4, 128);
    #pragma unroll
    for (int i_16 = 0; i_16 < 32; ++i_16) {
      float2 v = *(float2*)(u_frag + (i_16 * 2));
      if (i_16 < 4) {
        v.x = 0;
      }
      tl::__sync_thread_partial(4, 128);
      *(uint1*)(((bfloat16_t*)w_s) + (i_16 * 2)) = *(uint1*)(&v);
    }
    __syncthreads();
    #pragma unroll
    for (int i_17 = 0; i_17 < 16; ++i_17) {
      *(float2*)(acc + (i_17 * 2)) = make_float2(0.f, 0.f);  // { a brace in a comment }
    }
  }
}
"""


def test_finds_the_barrier_inside_an_unrolled_loop_only():
    found = loop_barriers(GENERATED)
    assert [n for n, _ in found] == [11], found
    assert found[0][1] == "for (int i_16 = 0; i_16 < 32; ++i_16) {"


def test_no_barrier_no_finding():
    assert loop_barriers(GENERATED.replace("      tl::__sync_thread_partial(4, 128);\n", "")) == []


def test_block_barrier_in_a_constant_loop_is_found():
    src = "void f() {\n  for (int i_31 = 0; i_31 < 16; ++i_31) {\n    __syncthreads();\n  }\n}\n"
    assert loop_barriers(src) == [(3, "for (int i_31 = 0; i_31 < 16; ++i_31) {")]


def test_installed_manifest_records_the_audit():
    kernels = flashqla.build_manifest().get("kernels", [])
    assert kernels, "no build manifest"
    for k in kernels:
        assert isinstance(k.get("barriers_in_unrolled_loops"), list), k["symbol"]
