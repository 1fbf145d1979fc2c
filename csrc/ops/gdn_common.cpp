#include "gdn_common.h"

#include <limits>

#include "dispatch.h"
#include "segment_plan.h"

namespace flashqla {

GdnDims check_gdn_inputs(const char* op, const Tensor& q, const Tensor& k, const Tensor& v, const char* g_name,
                         const Tensor& g, const Tensor& beta, const std::optional<Tensor>& initial_state,
                         const Tensor& cu_seqlens, bool state_v_first) {
  STD_TORCH_CHECK(q.is_cuda(), op, ": q must be a CUDA tensor");
  const int32_t device = q.get_device_index();
  check_cuda_contiguous(op, "q", q, device);
  check_cuda_contiguous(op, "k", k, device);
  check_cuda_contiguous(op, "v", v, device);
  check_cuda_contiguous(op, g_name, g, device);
  check_cuda_contiguous(op, "beta", beta, device);
  check_cuda_contiguous(op, "cu_seqlens", cu_seqlens, device);
  const ScalarType dt = q.scalar_type();
  STD_TORCH_CHECK(dt == ScalarType::BFloat16 || dt == ScalarType::Half, op, ": q must be bfloat16 or float16, got ",
                  dtype_name(dt));
  check_dtype(op, "k", k, dt);
  check_dtype(op, "v", v, dt);
  check_dtype(op, g_name, g, ScalarType::Float);
  check_dtype(op, "beta", beta, ScalarType::Float);
  check_dtype(op, "cu_seqlens", cu_seqlens, ScalarType::Int);

  STD_TORCH_CHECK(q.dim() == 4 && q.size(0) == 1, op, ": q must have shape [1, T, H, K], got ", shape_str(q));
  const int64_t T = q.size(1), H = q.size(2);
  STD_TORCH_CHECK(q.size(3) == kHeadDim, op, ": head size K must be 128, got ", q.size(3));
  check_shape(op, "k", k, {1, T, H, kHeadDim}, "[1, T, H, K] (as q)");
  STD_TORCH_CHECK(v.dim() == 4 && v.size(0) == 1 && v.size(1) == T, op, ": v must have shape [1, T, HV, V], got ",
                  shape_str(v));
  const int64_t HV = v.size(2);
  STD_TORCH_CHECK(v.size(3) == kHeadDim, op, ": head size V must be 128, got ", v.size(3));
  STD_TORCH_CHECK(H > 0 && HV > 0 && HV % H == 0, op, ": the number of v heads (", HV,
                  ") must be a positive multiple of the number of q/k heads (", H, ")");
  check_shape(op, g_name, g, {1, T, HV}, "[1, T, HV]");
  check_shape(op, "beta", beta, {1, T, HV}, "[1, T, HV]");
  STD_TORCH_CHECK(cu_seqlens.dim() == 1 && cu_seqlens.size(0) >= 1, op,
                  ": cu_seqlens must have shape [N + 1], got ", shape_str(cu_seqlens));
  const int64_t N = cu_seqlens.size(0) - 1;
  // one CTA row per sequence (plus one for the padding tail) on blockIdx.z of the sequential kernels
  STD_TORCH_CHECK(N + 1 <= kMaxGridRows, op, ": cu_seqlens holds ", N, " sequences; the CUDA kernels take at most ",
                  kMaxGridRows - 1, " per call (split the batch)");
  if (initial_state.has_value()) {
    check_cuda_contiguous(op, "initial_state", *initial_state, device);
    check_dtype(op, "initial_state", *initial_state, ScalarType::Float);
    check_shape(op, "initial_state", *initial_state, {N, HV, kHeadDim, kHeadDim},
                state_v_first ? "[N, HV, V, K]" : "[N, HV, K, V]");
  }
  // global offsets are 64-bit in the kernels (scripts/index_audit.py); token positions and CTA indices are
  // 32-bit: a chunk slot's first token (2T + 64(N + 1) bounds its intermediate terms), the chunk-parallel
  // grids (num_slots * HV; the forward warm-up has up to 4 CTAs per slot and head) and the sequential
  // grids (2 N HV)
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  const GdnDims d{device, dt, T, H, HV, N};
  const bool fits = T <= kMax && N <= kMax && HV <= kMax && 2 * T + kChunk * (N + 1) <= kMax &&
                    4 * d.num_slots() * HV <= kMax && 2 * N * HV <= kMax;
  STD_TORCH_CHECK(fits, op, ": too many tokens, sequences or heads for the kernels' 32-bit token positions and block "
                  "indices (T = ", T, ", N = ", N, ", HV = ", HV, ")");
  return d;
}

GdnDims with_max_seqlen(const char* op, GdnDims d, int64_t max_seqlen) {
  STD_TORCH_CHECK(max_seqlen >= 0 && max_seqlen <= d.T, op, ": max_seqlen must be 0 (unknown) or the longest "
                  "sequence's length in [1, T = ", d.T, "], got ", max_seqlen);
  d.max_seqlen = max_seqlen;
  return d;
}

void check_cp_segment_chunks(const char* op, int64_t cp_segment_chunks) {
  STD_TORCH_CHECK(cp_segment_chunks >= -1 && cp_segment_chunks <= (int64_t{1} << 24), op,
                  ": cp_segment_chunks must be -1 (automatic), 0 (off) or a chunk count in [1, 2^24], got ",
                  cp_segment_chunks);
}

SegmentTables make_segment_tables(const char* op, const GdnDims& d, const SegmentPlan& sp, const Tensor& g_cumsum,
                                  const Tensor& cu_seqlens, int64_t cp_segment_chunks, bool reverse, void* stream) {
  STD_TORCH_CHECK(!sp.cp || 2 * sp.num_segs <= kMaxGridRows, op, ": cp_segment_chunks = ", cp_segment_chunks,
                  " splits the ", d.T, " tokens into ", sp.num_segs, " segment slots; the warm-up pass runs at most ",
                  kMaxGridRows / 2, ": use longer segments");
  const int64_t range_rows = sp.cp ? 3 * sp.num_segs : sp.num_segs;
  SegmentTables st{sp, range_rows, torch::stable::new_empty(cu_seqlens, {sp.num_segs}),
                   torch::stable::new_empty(cu_seqlens, {range_rows, d.HV, 3}),
                   torch::stable::new_empty(cu_seqlens, {sp.cp ? sp.num_segs : 0, d.HV})};
  const auto& plan_kernel = find_variant("gdn_seg_plan", gdn_seg_plan_variants, d.device, "", 0);
  // pointers of absent optional tensors are never dereferenced (their flags are 0)
  void* plan_ptr = sp.cp ? st.cp_plan.data_ptr() : g_cumsum.data_ptr();
  char err[512] = {0};
  order_after_current(stream, d.device);  // the tables' blocks, on a side stream
  const int rc = plan_kernel.fn(cu_seqlens.data_ptr(), g_cumsum.data_ptr(), st.seg_seq.data_ptr(), st.ranges.data_ptr(),
                                plan_ptr, static_cast<int32_t>(sp.seg_tokens), sp.cp, reverse, d.N + 1, d.T, d.HV,
                                sp.num_segs, range_rows, stream, err, sizeof(err));
  STD_TORCH_CHECK(rc == 0, op, ": kernel launch failed: ", err);
  return st;
}

#ifdef FLASHQLA_HAS_GDN_CP_SCAN
namespace {
// correct_segments by the log-depth scan (tilelang_src/sm90/cp_scan.py): rounds of offset 1, 2, 4, ... until the offset
// reaches the most maps a sequence can have (ceil(T / segment) - 1: T, not the max_seqlen hint, so that a wrong hint
// cannot leave a state unwritten), the maps alternating between cp_out and a second buffer, their zero flags between
// two rows of flags. One allocation holds the start states, the second buffer and the flags, and the start states
// returned are a view of it: the caller keeps it alive as long as the states (until its stream join, where the
// correction ran on a side stream), so the scan's buffers live as long as the kernels that use them
Tensor scan_segments(const char* op, const GdnDims& d, const SegmentTables& st, const Tensor& cu_seqlens,
                     const Tensor& cp_out, const std::optional<Tensor>& start, bool state_v_first, bool reverse,
                     void* stream, const gdn_cp_scan_variant& scan) {
  const int64_t segs = st.sp.num_segs;
  const int64_t row_floats = d.HV * kHeadDim * kHeadDim;  // one slot's [HV, K, V]
  const int64_t flag_rows = (2 * segs * d.HV + row_floats - 1) / row_floats;  // [2, segs, HV] int32 in float rows
  Tensor whole = torch::stable::new_empty(cp_out, {3 * segs + flag_rows, d.HV, kHeadDim, kHeadDim});
  float* base = static_cast<float*>(whole.data_ptr());
  void* bufs[2] = {cp_out.data_ptr(), base + segs * row_floats};  // rows [segs, 3 segs): the second buffer
  int32_t* flag_base = reinterpret_cast<int32_t*>(base + 3 * segs * row_floats);
  void* zflags[2] = {flag_base, flag_base + segs * d.HV};
  const int64_t max_maps = (d.T + st.sp.seg_tokens - 1) / st.sp.seg_tokens - 1;
  const int64_t num_states = start.has_value() ? d.N : 0;
  char err[512] = {0};
  order_after_current(stream, d.device);  // the block, on a side stream
  for (int64_t round = 0, offset = 1; round == 0 || offset < max_maps; ++round, offset *= 2) {
    const int rc = scan.fn(cu_seqlens.data_ptr(), start ? start->data_ptr() : cp_out.data_ptr(), st.seg_seq.data_ptr(),
                           st.cp_plan.data_ptr(), bufs[round % 2], zflags[(round + 1) % 2], bufs[(round + 1) % 2],
                           zflags[round % 2], base, static_cast<int32_t>(d.T), static_cast<int32_t>(st.sp.seg_tokens),
                           start.has_value(), state_v_first, reverse, static_cast<int32_t>(offset), round == 0,
                           d.N + 1, num_states, d.HV, segs, 2 * segs, stream, err, sizeof(err));
    STD_TORCH_CHECK(rc == 0, op, ": kernel launch failed: ", err);
  }
  return torch::stable::narrow(whole, 0, 0, segs);  // rows [0, segs): the start states
}
}  // namespace
#endif

Correction choose_correction(const GdnDims& d) {
  Correction c;
#ifdef FLASHQLA_HAS_GDN_CP_SCAN
  if (cp_scan_requested()) {
    // the scan on A kept split (cp_scan_split.py: its first round reads the warm-up pass's split transitions) where
    // FLASHQLA_WALK_SPLIT_M asks for split transitions (the default) and the build has it, else the plain scan
    const auto* scan = walk_split_m_requested()
                           ? find_variant_or_null(gdn_cp_scan_variants, d.device, "", kBlockV, 0, 1) : nullptr;
    c.split_m = scan != nullptr;
    if (scan == nullptr) scan = find_variant_or_null(gdn_cp_scan_variants, d.device, "", kBlockV);
    if (scan != nullptr) {
      c.scan = scan;
      return c;
    }
    c.split_m = false;
  }
#endif
  const int bv = walk_block_v();
  const bool split = walk_split_m_requested();  // read on every call, as the width: a bad value fails either way
  if (split) c.walk = find_variant_or_null(gdn_cp_correct_variants, d.device, "", bv, 0, 1);
  c.split_m = c.walk != nullptr;
  if (c.walk == nullptr && bv == 32) c.walk = find_variant_or_null(gdn_cp_correct_variants, d.device, "", 32);
  if (c.walk == nullptr) c.walk = &find_variant("gdn_cp_correct", gdn_cp_correct_variants, d.device, "", kBlockV);
  return c;
}

Tensor correct_segments(const char* op, const GdnDims& d, const SegmentTables& st, const Tensor& cu_seqlens,
                        const Tensor& cp_out, const std::optional<Tensor>& start, bool state_v_first, bool reverse,
                        const Correction& how, void* stream) {
#ifdef FLASHQLA_HAS_GDN_CP_SCAN
  if (how.scan != nullptr) {
    return scan_segments(op, d, st, cu_seqlens, cp_out, start, state_v_first, reverse, stream, *how.scan);
  }
#endif
  Tensor corrected = torch::stable::new_empty(cp_out, {st.sp.num_segs, d.HV, kHeadDim, kHeadDim});
  const auto& correct = *how.walk;
  const int64_t num_states = start.has_value() ? d.N : 0;
  char err[512] = {0};
  order_after_current(stream, d.device);  // corrected's block, on a side stream
  const int rc = correct.fn(cu_seqlens.data_ptr(), start ? start->data_ptr() : cp_out.data_ptr(), st.cp_plan.data_ptr(),
                            cp_out.data_ptr(), corrected.data_ptr(), static_cast<int32_t>(d.T),
                            static_cast<int32_t>(st.sp.seg_tokens), start.has_value(), state_v_first, reverse,
                            d.N + 1, num_states, d.HV, st.sp.num_segs, 2 * st.sp.num_segs, stream, err, sizeof(err));
  STD_TORCH_CHECK(rc == 0, op, ": kernel launch failed: ", err);
  return corrected;
}

Tensor cp_start_states(const char* op, const GdnDims& d, gdn_fwd_launcher fn, const Tensor& q, const Tensor& k,
                       const Tensor& v, void* a, void* z, const Tensor& gates, const Tensor& beta,
                       const Tensor& cu_seqlens, const std::optional<Tensor>& initial_state, double scale,
                       bool state_v_first, const SegmentTables& st, void* unused, void* stream,
                       std::vector<Tensor>* workspace) {
  const SegmentPlan& sp = st.sp;
  Tensor cp_out = torch::stable::new_empty(gates, {2 * sp.num_segs, d.HV, kHeadDim, kHeadDim});
  order_after_current(stream, d.device);  // cp_out's block, on a side stream
  const Correction how = choose_correction(d);
  char err[512] = {0};
  const int rc = fn(q.data_ptr(), k.data_ptr(), v.data_ptr(), a, z, gates.data_ptr(), beta.data_ptr(),
                    cu_seqlens.data_ptr(), unused, unused, unused, unused, st.seg_seq.data_ptr(), st.ranges.data_ptr(),
                    unused, cp_out.data_ptr(), static_cast<float>(scale), 0, 0, state_v_first, 0, 0, how.warmup(),
                    group_size(d),
                    d.T, d.H, d.HV, d.N + 1, 0, 1, sp.num_segs, st.range_rows, 2 * sp.num_segs, stream, err,
                    sizeof(err));
  STD_TORCH_CHECK(rc == 0, op, ": kernel launch failed: ", err);
  Tensor start = correct_segments(op, d, st, cu_seqlens, cp_out, initial_state, state_v_first, false, how, stream);
  if (workspace != nullptr) workspace->insert(workspace->end(), {cp_out, start, st.cp_plan});
  return start;
}

void launch_fused_fwd(const char* op, const GdnDims& d, const Tensor& q, const Tensor& k, const Tensor& v,
                      const Tensor& A, const Tensor* z, const Tensor& g_cumsum, const Tensor& beta,
                      const Tensor& cu_seqlens, const std::optional<Tensor>& initial_state, double scale,
                      bool state_v_first, const FwdOutputs& out, int64_t cp_segment_chunks, void* stream,
                      std::vector<Tensor>* workspace) {
  check_cp_segment_chunks(op, cp_segment_chunks);
  // the V-slice width: 128 where the model prices it lower and this build has the kernel (the sm90 family), also
  // when the chunk states are stored (out.h: the backward's recompute, save_chunk_states): the storer warp keeps
  // up with BV = 128's one S~ buffer (H200: the recompute 0.401 -> 0.321 ms at (16, 32) 8192x4,
  // benchmarks/results/H200_chunk_states.md); FLASHQLA_FWD_BLOCK_V=32, 64 or 128 forces it (tests)
  const auto* wide = find_variant_or_null(gdn_fwd_variants, d.device, dtype_key(d.dtype), 128);
  const int forced = fwd_block_v_override();
  STD_TORCH_CHECK(forced != 128 || wide != nullptr, op, ": FLASHQLA_FWD_BLOCK_V=128, but this build has no 128-wide "
                  "forward kernel for this GPU (only the sm90 family has one)");
  const bool has_bv32 = find_variant_or_null(gdn_fwd_variants, d.device, dtype_key(d.dtype), 32) != nullptr;
  STD_TORCH_CHECK(forced != 32 || has_bv32, op, ": FLASHQLA_FWD_BLOCK_V=32, but this build has no 32-wide forward "
                  "kernel for this GPU (only the sm90 family has one)");
  // 32 where the 64-wide plan leaves half the SMs idle (segment_plan.h), not where the chunk states are stored
  const FwdPlan plan = plan_fwd(d.T, d.N, d.HV, d.max_seqlen, sm_count(d.device), cp_segment_chunks,
                                wide != nullptr, forced, has_bv32 && out.h == nullptr);
  const auto& fwd = find_variant("gdn_fwd", gdn_fwd_variants, d.device, dtype_key(d.dtype), plan.block_v);
  // the main pass by the register-operand forward of the same width (same launcher signature) where FLASHQLA_FWD_RS
  // asks for it (fwd_rs_requested) and no chunk states are stored (it keeps S~ in registers and has no storer for h)
  gdn_fwd_launcher main_fn = fwd.fn;
#ifdef FLASHQLA_HAS_GDN_FWD_RS
  if (out.h == nullptr && fwd_rs_requested()) {
    const auto* rs = find_variant_or_null(gdn_fwd_rs_variants, d.device, dtype_key(d.dtype), plan.block_v);
    if (rs != nullptr) main_fn = rs->fn;
  }
#endif
  // which sequence and chunks every CTA of each pass runs (tilelang_src/sm90/seg_plan.py)
  const SegmentTables st =
      make_segment_tables(op, d, plan.sp, g_cumsum, cu_seqlens, cp_segment_chunks, false, stream);
  const SegmentPlan& sp = st.sp;
  // pointers of absent optional tensors are never dereferenced (their flags are 0)
  void* unused = g_cumsum.data_ptr();
  void* h0 = initial_state.has_value() ? initial_state->data_ptr() : unused;
  STD_TORCH_CHECK(out.o == nullptr || z != nullptr, op, ": internal error: the forward's o needs the chunk prep's Z");
  // Z's TMA descriptor is encoded even when Z is not read: A has its shape, dtype and alignment. Likewise o's and h's
  // where a variant stores them by TMA: `unused` stands in (16-byte aligned), and h gets one slot when absent (a
  // descriptor cannot have a dimension of 0)
  void* z_ptr = z != nullptr ? z->data_ptr() : A.data_ptr();
  const bool store_ht = out.final_state != nullptr;
  const int64_t num_states = (initial_state.has_value() || store_ht) ? d.N : 0;
  char err[512] = {0};

  void* cp_h0_ptr = unused;
  std::optional<Tensor> cp_h0;
  if (sp.cp) {
    cp_h0 = cp_start_states(op, d, fwd.fn, q, k, v, A.data_ptr(), A.data_ptr(), g_cumsum, beta, cu_seqlens,
                            initial_state, scale, state_v_first, st, unused, stream, workspace);
    cp_h0_ptr = cp_h0->data_ptr();
  }
  if (workspace != nullptr) workspace->insert(workspace->end(), {st.seg_seq, st.ranges});

  const int rc = main_fn(q.data_ptr(), k.data_ptr(), v.data_ptr(), A.data_ptr(), z_ptr, g_cumsum.data_ptr(),
                        beta.data_ptr(), cu_seqlens.data_ptr(), h0, out.o ? out.o->data_ptr() : unused,
                        store_ht ? out.final_state->data_ptr() : unused, out.h ? out.h->data_ptr() : unused,
                        st.seg_seq.data_ptr(), st.ranges.data_ptr(), cp_h0_ptr, unused, static_cast<float>(scale),
                        initial_state.has_value(), store_ht, state_v_first, out.o != nullptr, out.h != nullptr, 0,
                        group_size(d), d.T, d.H, d.HV, d.N + 1, num_states, out.h ? d.num_slots() : 1, sp.num_segs,
                        st.range_rows, sp.num_segs, stream, err, sizeof(err));
  STD_TORCH_CHECK(rc == 0, op, ": kernel launch failed: ", err);
}

}  // namespace flashqla
