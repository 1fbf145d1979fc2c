"""The programmatic-dependent-launch audit (scripts/pdl_audit.py, run by codegen at build time): in a kernel that waits
on the grid dependency, the wait is at the body's top level and no pointer parameter, tensor map (but for its
prefetch) or __ldg is used before it (hand-written kernels in TileLang 0.1.15's output style)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from pdl_audit import pdl_violations  # noqa: E402

HEAD = ('extern "C" __global__ void __launch_bounds__(512, 1) gdn_fwd_kernel(const bfloat16_t* A, '
        "__grid_constant__ const CUtensorMap A_desc, const int* seg_seq, float* o, int num_segs) {")
PROLOGUE = """  extern __shared__ __align__(1024) uchar buf_dyn_shmem[];
  __shared__ __align__(16) uint64_t full_mem[2];
  auto full = reinterpret_cast<Barrier*>(full_mem);
  if (tl::tl_shuffle_elect<0>()) {
    tl::prefetch_tma_descriptor(A_desc);
  }
  if (tl::tl_shuffle_elect<0>()) {
    full[0].init(96);
  }
  tl::fence_barrier_init();
  __syncthreads();"""
SYNC = "  cudaTriggerProgrammaticLaunchCompletion();\n  cudaGridDependencySynchronize();"
BODY = """  int n = seg_seq[((int)blockIdx.z) % num_segs];
  if (((int)threadIdx.x) < 32) {
    tl::tma_load(A_desc, full[0], (&(((bfloat16_t*)buf_dyn_shmem)[0])), 0, 0, n);
  }
  o[((int)threadIdx.x)] = 0.0f;
}"""


def kernel(*parts: str) -> str:
    return "\n".join([HEAD, *parts])


def assert_one_violation(source: str, what: str) -> None:
    got = pdl_violations(source)
    assert len(got) == 1 and what in got[0], got


def test_wait_after_the_prologue_passes():
    assert pdl_violations(kernel(PROLOGUE, SYNC, BODY)) == []


def test_kernel_without_the_wait_is_not_audited():
    assert pdl_violations(kernel(PROLOGUE, BODY)) == []


def test_table_read_before_the_wait_is_a_violation():
    first, rest = BODY.split("\n", 1)
    assert_one_violation(kernel(PROLOGUE, first, SYNC, rest), "seg_seq accessed before")


def test_tma_load_before_the_wait_is_a_violation():
    load = "  tl::tma_load(A_desc, full[0], (&(((bfloat16_t*)buf_dyn_shmem)[0])), 0, 0, 0);"
    assert_one_violation(kernel(PROLOGUE, load, SYNC, BODY), "tensor map used before")


def test_nested_or_repeated_wait_is_a_violation():
    nested = "  if (((int)threadIdx.x) < 128) {\n    cudaGridDependencySynchronize();\n  }"
    assert_one_violation(kernel(PROLOGUE, nested, BODY), "nested")
    assert_one_violation(kernel(PROLOGUE, SYNC, SYNC, BODY), "2 grid-dependency waits")


def test_ldg_anywhere_is_a_violation():
    ldg = "  float x = __ldg(&(((const float*)o)[0]));"
    assert_one_violation(kernel(PROLOGUE, SYNC, ldg, BODY), "__ldg")
