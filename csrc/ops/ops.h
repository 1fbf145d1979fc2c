// Op entry points registered in csrc/bindings.cpp. Schemas and semantics: docs/ops.md.
#pragma once

#include <optional>
#include <tuple>

#include <torch/csrc/stable/tensor.h>

namespace flashqla {

// (o, final_state, g_cumsum, A, chunk_states)
std::tuple<torch::stable::Tensor, torch::stable::Tensor, torch::stable::Tensor, torch::stable::Tensor,
           torch::stable::Tensor>
gdn_fwd_cuda(torch::stable::Tensor q, torch::stable::Tensor k, torch::stable::Tensor v, torch::stable::Tensor g,
             torch::stable::Tensor beta, double scale, std::optional<torch::stable::Tensor> initial_state,
             torch::stable::Tensor cu_seqlens, bool output_final_state, bool state_v_first,
             int64_t cp_segment_chunks, bool output_chunk_states, int64_t max_seqlen);

// (o, final_state): the forward for inference, without the intermediates a backward reads
std::tuple<torch::stable::Tensor, torch::stable::Tensor> gdn_prefill_cuda(
    torch::stable::Tensor q, torch::stable::Tensor k, torch::stable::Tensor v, torch::stable::Tensor g,
    torch::stable::Tensor beta, double scale, std::optional<torch::stable::Tensor> initial_state,
    torch::stable::Tensor cu_seqlens, bool output_final_state, bool state_v_first, int64_t cp_segment_chunks,
    int64_t max_seqlen);

// (dq, dk, dv, dg, dbeta, dh0)
std::tuple<torch::stable::Tensor, torch::stable::Tensor, torch::stable::Tensor, torch::stable::Tensor,
           torch::stable::Tensor, torch::stable::Tensor>
gdn_bwd_cuda(torch::stable::Tensor q, torch::stable::Tensor k, torch::stable::Tensor v, torch::stable::Tensor g_cumsum,
             torch::stable::Tensor beta, torch::stable::Tensor A, torch::stable::Tensor do_,
             std::optional<torch::stable::Tensor> dht, double scale, std::optional<torch::stable::Tensor> initial_state,
             torch::stable::Tensor cu_seqlens, bool state_v_first, int64_t cp_segment_chunks,
             std::optional<torch::stable::Tensor> chunk_states, int64_t max_seqlen);

}  // namespace flashqla
