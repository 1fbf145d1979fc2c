"""The TMA-store audit (scripts/tma_store_audit.py, run by codegen at build time): a TMA store must follow a thread
barrier that itself follows a proxy fence, or an mbarrier wait (hand-written snippets in TileLang 0.1.15's output
style; the unfenced case is the seventeenth session's first tma_dv, whose fence landed after TileLang's barrier)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from tma_store_audit import tma_store_violations  # noqa: E402

WRITE = "        tl::ptx_stmatrix_m8n8_x4((&(((bfloat16_t*)dvd_s)[0])), a, b, c, d);"
STORE = """        if (tl::tl_shuffle_elect<128>()) {
          #pragma unroll
          for (int i_55 = 0; i_55 < 2; ++i_55) {
            tl::tma_store(dv_desc, (&(((bfloat16_t*)dvd_s)[(i_55 * 4096)])), (i_55 * 64), t0, hv);
          }
          tl::tma_store_arrive();
        }"""


def test_fence_then_barrier_then_store_passes():
    src = "\n".join([WRITE, "        tl::fence_proxy_async();", "        tl::__sync_thread_partial(4, 128);",
                     "        if (full) {", STORE, "        }"])
    assert tma_store_violations(src) == []
    # a block-wide barrier, and a second store of the same group after the first one's arrive
    src = "\n".join([WRITE, "    tl::fence_proxy_async();", "    __syncthreads();", "    if (full) {",
                     "      if (tl::tl_shuffle_elect<128>()) {", "        tl::tma_store(A_desc, p, 0, t0, hv);",
                     "        tl::tma_store_arrive();", "        tl::tma_store(z_desc, q, 0, t0, hv);",
                     "        tl::tma_store_arrive();", "      }", "    }"])
    assert tma_store_violations(src) == []


def test_fence_after_the_barrier_is_a_violation():
    src = "\n".join([WRITE, "        tl::__sync_thread_partial(4, 128);", "        if (full) {",
                     "          tl::fence_proxy_async();", STORE, "        }"])
    got = tma_store_violations(src)
    assert len(got) == 1 and "no fenced barrier" in got[0]


def test_barrier_without_fence_is_a_violation():
    src = "\n".join([WRITE, "        tl::__sync_thread_partial(4, 128);", STORE])
    got = tma_store_violations(src)
    assert len(got) == 1 and "not preceded by tl::fence_proxy_async();" in got[0]


def test_store_straight_after_writes_is_a_violation():
    assert len(tma_store_violations("\n".join([WRITE, STORE]))) == 1


def test_mbarrier_wait_hand_off_passes():
    src = """              for (int i_34 = 0; i_34 < n_iter; ++i_34) {
                st_ready[(i_34 & 1)].wait(((i_34 & 3) >> 1));
                if ((store_h != 0) && (warmup == 0)) {
                  if (tl::tl_shuffle_elect<32>()) {
                    tl::tma_store(h_desc, (&(((bfloat16_t*)st_s)[((i_34 & 1) * 8192)])), 0, 0, hv, slot);
                    tl::tma_store_arrive();
                  }
                  tl::tma_store_wait<0, true>();
                }
                st_free[(i_34 & 1)].arrive();
              }"""
    assert tma_store_violations(src) == []


def test_sources_without_tma_stores_pass():
    assert tma_store_violations("__global__ void k() {\n  __syncthreads();\n}\n") == []
