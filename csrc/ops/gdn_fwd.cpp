// torch.ops.flashqla.gdn_fwd on CUDA: checks, output allocation, two kernel launches (chunk prep, fused
// forward; with FLASHQLA_TRAIN_NOPREP=1 where it applies the prep without Z and the prep-free forward). Varlen form
// only; the Python API flattens dense batches.
// With output_chunk_states the fused forward also stores every chunk's start state by chunk slot, what
// gdn_bwd otherwise recomputes (docs/ops.md).
#include <algorithm>

#include "dispatch.h"
#include "gdn_common.h"
#include "ops.h"
#include "segment_plan.h"

namespace flashqla {

namespace {
constexpr const char* kOp = "flashqla::gdn_fwd";

// v-heads per CTA of the chunk prep (tilelang_src/sm90/chunk_prep.py): the largest divisor of the group up to
// the kernel's VPC_MAX of 4 (Q, K, K K^T and Q K^T once per CTA); 1 with FLASHQLA_PREP_GROUP=0 (the same outputs
// bit for bit, slower: benchmarks/results/H200_prep_group.md)
int32_t prep_heads_per_cta(int32_t group) {
  if (!prep_group_enabled()) return 1;
  for (int32_t vpc = std::min<int32_t>(group, 4); vpc >= 2; --vpc) {
    if (group % vpc == 0) return vpc;
  }
  return 1;
}

// The chunk prep's launches (tilelang_src/sm90/chunk_prep.py) from `table`: gdn_chunk_prep_variants (g_cumsum, A and
// Z) or, where the build has it, gdn_chunk_prep_a_variants (the same kernel without Z: g_cumsum and A only, bit for bit
// the same; z is not written and q not read, any pointer stands in for them)
template <class Variant, size_t N>
void launch_chunk_prep(const char* op, const char* kernel, const Variant (&table)[N], const GdnDims& d, const Tensor& q,
                       const Tensor& k, const Tensor& g, const Tensor& beta, const Tensor& cu_seqlens,
                       Tensor& g_cumsum, Tensor& A, void* z, double scale, void* stream) {
  const auto& prep = find_variant(kernel, table, d.device, dtype_key(d.dtype), 0);
  const int32_t group = group_size(d);
  const int32_t vpc = prep_heads_per_cta(group);
  // the slot is blockIdx.z (tilelang_src/sm90/chunk_prep.py): launches of at most kMaxGridRows slots
  for (int64_t slot0 = 0; slot0 < d.num_slots(); slot0 += kMaxGridRows) {
    const int64_t count = std::min<int64_t>(d.num_slots() - slot0, kMaxGridRows);
    char err[512] = {0};
    const int rc = prep.fn(q.data_ptr(), k.data_ptr(), g.data_ptr(), beta.data_ptr(), cu_seqlens.data_ptr(),
                           g_cumsum.data_ptr(), A.data_ptr(), z, static_cast<float>(scale),
                           static_cast<int32_t>(count), static_cast<int32_t>(slot0), group, vpc, group / vpc, d.T,
                           d.H, d.HV, d.N + 1, stream, err, sizeof(err));
    STD_TORCH_CHECK(rc == 0, op, ": kernel launch failed: ", err);
  }
}

#ifdef FLASHQLA_HAS_GDN_FWD_NOPREP
// Each chunk's summed decay from the raw gates, at the chunk's last token (tilelang_src/sm90/chunk_decay.py): what
// the segment plan reads of a g_cumsum, for a forward without the chunk prep. Rows elsewhere are not written.
Tensor chunk_decays(const char* op, const GdnDims& d, const Tensor& g, const Tensor& cu_seqlens, void* stream) {
  Tensor decay = torch::stable::new_empty(g, {1, d.T, d.HV});
  const auto& kernel = find_variant("gdn_chunk_decay", gdn_chunk_decay_variants, d.device, "", 0);
  char err[512] = {0};
  const int rc = kernel.fn(g.data_ptr(), cu_seqlens.data_ptr(), decay.data_ptr(),
                           static_cast<int32_t>(d.num_slots()), d.T, d.HV, d.N + 1, stream, err, sizeof(err));
  STD_TORCH_CHECK(rc == 0, op, ": kernel launch failed: ", err);
  return decay;
}

// The forward's plan where the forward without the chunk prep (tilelang_src/sm90/gdn_fwd_noprep.py) runs it:
// FLASHQLA_FWD_NOPREP not 0 (dispatch.h fwd_noprep_setting; by default at every group size), the build has the
// kernel and the 128-wide fused forward, and the plan takes the 128-wide V slice; else none
std::optional<FwdPlan> noprep_plan(const GdnDims& d, int64_t cp_segment_chunks) {
  if (fwd_noprep_setting() == 0) return std::nullopt;
  if (find_variant_or_null(gdn_fwd_noprep_variants, d.device, dtype_key(d.dtype), 128) == nullptr ||
      find_variant_or_null(gdn_fwd_variants, d.device, dtype_key(d.dtype), 128) == nullptr) {
    return std::nullopt;
  }
  const FwdPlan plan = plan_fwd(d.T, d.N, d.HV, d.max_seqlen, sm_count(d.device), cp_segment_chunks, true,
                                fwd_block_v_override());
  if (plan.block_v != 128) return std::nullopt;
  return plan;
}

// The forward without the chunk prep on noprep_plan's plan: the inverse, the gates' cumsum and the intra-chunk scores
// formed in the kernel, nothing but o and the final state written. With context parallelism the same kernel runs the
// warm-up pass (every segment's end state from zero, and the transition matrices of the segments whose decay does not
// reach the plan's threshold), the correction walk chains them, and the main pass starts each segment from its
// corrected state, as launch_fused_fwd does with the prep's kernels; the plan's decays come from chunk_decays.
void launch_noprep_fwd(const char* op, const GdnDims& d, const FwdPlan& plan, const Tensor& q, const Tensor& k,
                       const Tensor& v, const Tensor& g, const Tensor& beta, const Tensor& cu_seqlens,
                       const std::optional<Tensor>& initial_state, double scale, bool state_v_first, Tensor& o,
                       Tensor* final_state, int64_t cp_segment_chunks, void* stream) {
  const auto& np = find_variant("gdn_fwd_noprep", gdn_fwd_noprep_variants, d.device, dtype_key(d.dtype), 128);
  const SegmentPlan& sp = plan.sp;
  // the tables read the chunks' decays only with context parallelism
  const Tensor decay = sp.cp ? chunk_decays(op, d, g, cu_seqlens, stream) : g;
  const SegmentTables st = make_segment_tables(op, d, sp, decay, cu_seqlens, cp_segment_chunks, false, stream);
  // A, z, h and (per pass) cp_h0 or cp_out are not read (their flags are 0, and the kernel has no A or Z): q stands in
  void* unused = q.data_ptr();
  void* cp_h0_ptr = unused;
  std::optional<Tensor> cp_h0;
  if (sp.cp) {
    cp_h0 = cp_start_states(op, d, np.fn, q, k, v, unused, unused, g, beta, cu_seqlens, initial_state, scale,
                            state_v_first, st, unused, stream);
    cp_h0_ptr = cp_h0->data_ptr();
  }
  const bool store_ht = final_state != nullptr;
  const int64_t num_states = (initial_state.has_value() || store_ht) ? d.N : 0;
  char err[512] = {0};
  const int rc = np.fn(q.data_ptr(), k.data_ptr(), v.data_ptr(), unused, unused, g.data_ptr(), beta.data_ptr(),
                       cu_seqlens.data_ptr(), initial_state.has_value() ? initial_state->data_ptr() : unused,
                       o.data_ptr(), store_ht ? final_state->data_ptr() : unused, unused, st.seg_seq.data_ptr(),
                       st.ranges.data_ptr(), cp_h0_ptr, unused, static_cast<float>(scale), initial_state.has_value(),
                       store_ht, state_v_first, 1, 0, 0, group_size(d), d.T, d.H, d.HV, d.N + 1, num_states, 1,
                       sp.num_segs, st.range_rows, sp.num_segs, stream, err, sizeof(err));
  STD_TORCH_CHECK(rc == 0, op, ": kernel launch failed: ", err);
}
#endif
}  // namespace

std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> gdn_fwd_cuda(Tensor q, Tensor k, Tensor v, Tensor g, Tensor beta,
                                                                double scale, std::optional<Tensor> initial_state,
                                                                Tensor cu_seqlens, bool output_final_state,
                                                                bool state_v_first, int64_t cp_segment_chunks,
                                                                bool output_chunk_states, int64_t max_seqlen) {
  const GdnDims d = with_max_seqlen(
      kOp, check_gdn_inputs(kOp, q, k, v, "g", g, beta, initial_state, cu_seqlens, state_v_first), max_seqlen);
  torch::stable::accelerator::DeviceGuard guard(d.device);
  Tensor o = torch::stable::new_empty(v, {1, d.T, d.HV, kHeadDim});
  Tensor g_cumsum = torch::stable::new_empty(g, {1, d.T, d.HV});
  Tensor A = torch::stable::new_empty(q, {1, d.T, d.HV, kChunk});
  Tensor final_state = torch::stable::new_empty(g, {output_final_state ? d.N : 0, d.HV, kHeadDim, kHeadDim});
  // [S, HV, K, V] in q's dtype, S = ceil(T / 64) + N chunk slots ([K, V] whatever state_v_first says); the
  // slots that no chunk owns are not written
  Tensor chunk_states =
      torch::stable::new_empty(q, {output_chunk_states ? d.num_slots() : 0, d.HV, kHeadDim, kHeadDim});
  poison({&o, &g_cumsum, &A, &final_state, &chunk_states});

  if (d.T == 0) {  // every sequence is empty: the final state is the initial state
    if (output_final_state) {
      if (initial_state.has_value()) {
        torch::stable::copy_(final_state, *initial_state);
      } else {
        torch::stable::zero_(final_state);
      }
    }
    return {o, final_state, g_cumsum, A, chunk_states};
  }
  for (auto [name, t] : {std::pair{"q", &q}, {"k", &k}, {"v", &v}, {"A", &A}}) check_aligned16(kOp, name, *t);

  void* stream = current_stream(d.device);
#if defined(FLASHQLA_HAS_GDN_FWD_NOPREP) && defined(FLASHQLA_HAS_GDN_CHUNK_PREP_A)
  // FLASHQLA_TRAIN_NOPREP=1 (dispatch.h): where the prep-free kernel takes the plan and no chunk states are asked for,
  // the chunk prep without Z (g_cumsum and A for the backward, their bits as below) and that kernel for o and the
  // final state, instead of the whole prep and the fused forward
  if (train_noprep_requested() && !output_chunk_states && d.N > 0) {
    if (const std::optional<FwdPlan> plan = noprep_plan(d, cp_segment_chunks)) {
      launch_chunk_prep(kOp, "gdn_chunk_prep_a", gdn_chunk_prep_a_variants, d, q, k, g, beta, cu_seqlens, g_cumsum,
                        A, A.data_ptr(), scale, stream);
      launch_noprep_fwd(kOp, d, *plan, q, k, v, g, beta, cu_seqlens, initial_state, scale, state_v_first, o,
                        output_final_state ? &final_state : nullptr, cp_segment_chunks, stream);
      return {o, final_state, g_cumsum, A, chunk_states};
    }
  }
#else
  (void)train_noprep_requested();  // the setting is still checked
#endif
  // Z: the intra-chunk matrix of o, a workspace of A's size (docs/memory.md)
  Tensor z = torch::stable::new_empty(q, {1, d.T, d.HV, kChunk});
  launch_chunk_prep(kOp, "gdn_chunk_prep", gdn_chunk_prep_variants, d, q, k, g, beta, cu_seqlens, g_cumsum, A,
                    z.data_ptr(), scale, stream);
  if (d.N == 0) {  // no sequences: every token is padding
    torch::stable::zero_(o);
    return {o, final_state, g_cumsum, A, chunk_states};
  }
  FwdOutputs out;
  out.o = &o;
  out.final_state = output_final_state ? &final_state : nullptr;
  out.h = output_chunk_states ? &chunk_states : nullptr;
  launch_fused_fwd(kOp, d, q, k, v, A, &z, g_cumsum, beta, cu_seqlens, initial_state, scale, state_v_first, out,
                   cp_segment_chunks, stream);
  return {o, final_state, g_cumsum, A, chunk_states};
}

std::tuple<Tensor, Tensor> gdn_prefill_cuda(Tensor q, Tensor k, Tensor v, Tensor g, Tensor beta, double scale,
                                            std::optional<Tensor> initial_state, Tensor cu_seqlens,
                                            bool output_final_state, bool state_v_first, int64_t cp_segment_chunks,
                                            int64_t max_seqlen) {
  // the checks under this op's name, in every build (gdn_fwd_cuda below repeats them)
  constexpr const char* kPrefill = "flashqla::gdn_prefill";
  const GdnDims d = with_max_seqlen(
      kPrefill, check_gdn_inputs(kPrefill, q, k, v, "g", g, beta, initial_state, cu_seqlens, state_v_first),
      max_seqlen);
  check_cp_segment_chunks(kPrefill, cp_segment_chunks);
#ifdef FLASHQLA_HAS_GDN_FWD_NOPREP
  if (d.T > 0 && d.N > 0) {
    torch::stable::accelerator::DeviceGuard guard(d.device);
    for (auto [name, t] : {std::pair{"q", &q}, {"k", &k}, {"v", &v}}) check_aligned16(kPrefill, name, *t);
    Tensor o = torch::stable::new_empty(v, {1, d.T, d.HV, kHeadDim});
    Tensor final_state = torch::stable::new_empty(g, {output_final_state ? d.N : 0, d.HV, kHeadDim, kHeadDim});
    poison({&o, &final_state});
    if (const std::optional<FwdPlan> plan = noprep_plan(d, cp_segment_chunks)) {
      launch_noprep_fwd(kPrefill, d, *plan, q, k, v, g, beta, cu_seqlens, initial_state, scale, state_v_first, o,
                        output_final_state ? &final_state : nullptr, cp_segment_chunks, current_stream(d.device));
      return {o, final_state};
    }
  }
#else
  (void)d;
#endif
  // elsewhere: the chunk prep and the fused forward, their intermediates dropped
  auto [o, final_state, g_cumsum, A, chunk_states] =
      gdn_fwd_cuda(q, k, v, g, beta, scale, initial_state, cu_seqlens, output_final_state, state_v_first,
                   cp_segment_chunks, false, max_seqlen);
  return {o, final_state};
}

}  // namespace flashqla
