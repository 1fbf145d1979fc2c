"""Sums over a thread-block cluster through distributed shared memory (SM90): the CTAs of a cluster hand each other
staged tiles without a trip through global memory. gdn_bwd_fused.py sums dq and dk over the v-heads of a group this
way: every CTA stages its part (bf16 or fp16) in its own shared memory; the receiving CTA adds the others' staged
tiles into its own (add_remote_tile), then tells each sender its buffer is free.

The add works on the tiles' bytes, 16 at a time per thread, not on TileLang's logical layout: every CTA of a kernel
lays out (and swizzles) its shared memory alike, so the same byte offset holds the same element in each. That keeps
it out of the register file (an add into the fp32 dQ fragment, element by element in its layout, had nvcc spill
~130 words around it in WA's loop); the price is one more rounding per part (own part, other part, their sum).

The device helpers are PTX with explicit cluster scope: a sender's stores into its own shared memory become visible
to the receiver's remote loads through the sender's release arrive (release.cluster) on the receiver's mbarrier and
the receiver's acquire wait (acquire.cluster); the receiver's remote loads are ordered before the sender's next
writes to that buffer the same way in the other direction. Kernels pass CLUSTER_PRELUDE as T.Kernel's prelude."""

import tilelang.language as T

CLUSTER_PRELUDE = r"""
// flashqla cluster helpers (tilelang_src/common/cluster_sum.py)
__device__ __forceinline__ void fq_arrive_cluster(const void* bar, int rank) {
  unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(bar));
  asm volatile("{\n\t.reg .b32 ra;\n\tmapa.shared::cluster.u32 ra, %0, %1;\n\t"
               "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [ra];\n\t}"
               : : "r"(addr), "r"(rank) : "memory");
}
__device__ __forceinline__ void fq_wait_cluster(const void* bar, int parity) {
  unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(bar));
  asm volatile("{\n\t.reg .pred p;\n\tFQ_WAIT:\n\t"
               "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%0], %1;\n\t"
               "@!p bra FQ_WAIT;\n\t}"
               : : "r"(addr), "r"(parity) : "memory");
}
// two 16-bit floats (bf16 when is_bf16, else fp16) packed in a word: a + b in fp32, rounded to nearest
__device__ __forceinline__ unsigned fq_add2(unsigned a, unsigned b, bool is_bf16) {
  float a0, a1, b0, b1;
  unsigned out;
  if (is_bf16) {
    a0 = __uint_as_float(a << 16); a1 = __uint_as_float(a & 0xffff0000u);
    b0 = __uint_as_float(b << 16); b1 = __uint_as_float(b & 0xffff0000u);
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(out) : "f"(a1 + b1), "f"(a0 + b0));
  } else {
    unsigned short a0h = a & 0xffffu, a1h = a >> 16, b0h = b & 0xffffu, b1h = b >> 16;
    asm("cvt.f32.f16 %0, %1;" : "=f"(a0) : "h"(a0h)); asm("cvt.f32.f16 %0, %1;" : "=f"(a1) : "h"(a1h));
    asm("cvt.f32.f16 %0, %1;" : "=f"(b0) : "h"(b0h)); asm("cvt.f32.f16 %0, %1;" : "=f"(b1) : "h"(b1h));
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(out) : "f"(a1 + b1), "f"(a0 + b0));
  }
  return out;
}
// tile (bytes of this CTA's shared memory) += the same bytes of CTA `rank`, by the `threads` threads of named
// barrier `bar_id` (this one is thread `tid`), between two syncs of those threads: their own part is all staged
// before, and each reads the whole sum after
__device__ __forceinline__ void fq_add_remote_tile(void* tile, int bytes, int rank, int tid, int threads, int bar_id,
                                                   bool is_bf16) {
  asm volatile("bar.sync %0, %1;" : : "r"(bar_id), "r"(threads) : "memory");
  unsigned local = static_cast<unsigned>(__cvta_generic_to_shared(tile)), remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
  for (int off = tid * 16; off < bytes; off += threads * 16) {
    unsigned r0, r1, r2, r3, l0, l1, l2, l3;
    asm volatile("ld.shared::cluster.v4.b32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(remote + off) : "memory");
    asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(l0), "=r"(l1), "=r"(l2), "=r"(l3) : "r"(local + off) : "memory");
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};"
                 : : "r"(local + off), "r"(fq_add2(l0, r0, is_bf16)), "r"(fq_add2(l1, r1, is_bf16)),
                     "r"(fq_add2(l2, r2, is_bf16)), "r"(fq_add2(l3, r3, is_bf16)) : "memory");
  }
  asm volatile("bar.sync %0, %1;" : : "r"(bar_id), "r"(threads) : "memory");
}
__device__ __forceinline__ void fq_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" : : : "memory");
}
"""


@T.macro
def wait_cluster(bar, parity):
    """Wait for phase `parity` of bar[0] (this CTA's), acquiring what its remote arrivers released."""
    T.call_extern("handle", "fq_wait_cluster", T.address_of(bar[0]), parity)


@T.macro
def arrive_cluster(bar, rank):
    """Arrive on bar[0] of the cluster's CTA `rank`, releasing this thread's earlier accesses to it."""
    T.call_extern("handle", "fq_arrive_cluster", T.address_of(bar[0]), rank)


@T.macro
def add_remote_tile(tile, rank, tid, threads, bar_id, nbytes, is_bf16):
    """tile += the staged tile of the cluster's CTA `rank` (16-bit floats, nbytes of shared memory), by `threads`
    threads of one role (thread `tid` of them), which sync on named barrier `bar_id` (no other role may use it) before
    and after: this CTA's own part must be staged (or acquired) by all of them before."""
    T.call_extern("handle", "fq_add_remote_tile", T.address_of(tile[0, 0]), nbytes, rank, tid, threads, bar_id,
                  is_bf16)


@T.macro
def cluster_sync():
    """Every thread of every CTA of the cluster: no CTA leaves while another may still touch its shared memory."""
    T.call_extern("handle", "fq_cluster_sync")
