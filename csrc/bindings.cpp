// The one place that registers flashqla's torch ops. Schemas are documented in docs/ops.md.
// CUDA kernels are registered here; the CPU (reference) and Meta (fake) implementations and
// autograd are registered from python/flashqla/_ops.py.
#include <torch/csrc/stable/library.h>

#include "ops/ops.h"

STABLE_TORCH_LIBRARY(flashqla, m) {
  m.def(
      "gdn_fwd(Tensor q, Tensor k, Tensor v, Tensor g, Tensor beta, float scale, Tensor? initial_state, "
      "Tensor cu_seqlens, bool output_final_state, bool state_v_first, int cp_segment_chunks=-1, "
      "bool output_chunk_states=False, int max_seqlen=0) -> (Tensor o, Tensor final_state, Tensor g_cumsum, "
      "Tensor A, Tensor chunk_states)");
  m.def(
      "gdn_prefill(Tensor q, Tensor k, Tensor v, Tensor g, Tensor beta, float scale, Tensor? initial_state, "
      "Tensor cu_seqlens, bool output_final_state, bool state_v_first, int cp_segment_chunks=-1, int max_seqlen=0) "
      "-> (Tensor o, Tensor final_state)");
  m.def(
      "gdn_bwd(Tensor q, Tensor k, Tensor v, Tensor g_cumsum, Tensor beta, Tensor A, Tensor do, Tensor? dht, "
      "float scale, Tensor? initial_state, Tensor cu_seqlens, bool state_v_first, int cp_segment_chunks=-1, "
      "Tensor? chunk_states=None, int max_seqlen=0) -> (Tensor dq, Tensor dk, Tensor dv, Tensor dg, Tensor dbeta, "
      "Tensor dh0)");
}

STABLE_TORCH_LIBRARY_IMPL(flashqla, CUDA, m) {
  m.impl("gdn_fwd", TORCH_BOX(&flashqla::gdn_fwd_cuda));
  m.impl("gdn_prefill", TORCH_BOX(&flashqla::gdn_prefill_cuda));
  m.impl("gdn_bwd", TORCH_BOX(&flashqla::gdn_bwd_cuda));
}
