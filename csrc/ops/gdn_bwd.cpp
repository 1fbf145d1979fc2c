// torch.ops.flashqla.gdn_bwd on CUDA: recompute the per-chunk start states (the forward kernel with
// states stored by chunk slot, on a side stream; skipped when the caller passes the forward's chunk_states),
// run the reverse state-gradient recurrence beside it, then the chunk-parallel gradient kernel, which sums dq
// and dk over each group of v-heads (the SM120 program, within its 99 KB of shared memory, writes them per
// v-head in fp32 and the op sums them). At one v-head per qk-head, where the build has it (sm90), the fused backward
// (tilelang_src/sm90/gdn_bwd_fused.py) replaces the recurrence's main pass and the chunk kernel: one CTA per segment
// and v-head forms every gradient on its walk, with its own segment plan (the warm-up pass and the correction of
// context parallelism stay as they are). H200, flashqla alone (benchmarks/results/H200_fused_bwd.md): the training
// step 0.75-0.95x the two passes' time at (16, 16) and (32, 32), the backward alone 0.69-0.92x. FLASHQLA_FUSED_BWD=0
// keeps the two passes. At two v-heads per qk-head the fused kernel's cluster variant (a cluster per group, dq and dk
// summed through distributed shared memory) runs by default (FLASHQLA_FUSED_GROUPS below).
#include <cstring>
#include <vector>

#include "dispatch.h"
#include "gdn_common.h"
#include "ops.h"

namespace flashqla {

namespace {
constexpr const char* kOp = "flashqla::gdn_bwd";
// groups of v-heads per qk-head up to this size run a chunk-gradient small-group variant where there is one (its
// key gmax in tilelang_src/variants.py: the smallest gmax at least the group)
constexpr int64_t kSmallGroup = 2;

// The chunk-gradient programs differ in what they write for dq and dk: the SM90 program (also lowered for
// SM100) sums each group of v-heads in the kernel ([1, T, H, K] in q's dtype); the SM120 program writes
// them per v-head ([1, T, HV, K] fp32) and group_sum below adds them up. Same launcher signature.
bool chunk_kernel_sums_groups(const char* family) { return std::strcmp(family, "sm120") != 0; }

// FLASHQLA_FUSED_BWD (read on every call): "0" keeps the two passes, "1" or unset runs the fused backward where it
// applies
bool fused_bwd_requested() { return env_setting_01("FLASHQLA_FUSED_BWD") != 0; }

// Whether the fused backward runs at G > 1 v-heads per qk-head, by its variant of key gmax == G (the G CTAs of a
// segment row form a cluster; rank 0 stores dq, rank G - 1 dk) where the build has one. FLASHQLA_FUSED_GROUPS (read
// on every call): "1" at every such G, "0" at none, unset at G = 2 only. H100, flashqla alone, against the two passes
// (37th session, benchmarks/results/s37/README.md): the backward at (16, 32) 0.98x (1x32768) and 1.06-1.32x the
// speed elsewhere, the training step 1.04-1.24x; at (2, 4) 0.95-1.11x; at three and four v-heads the step 0.66-0.93x
bool fused_at_group(int64_t group) {
  const int setting = env_setting_01("FLASHQLA_FUSED_GROUPS");
  return group == 1 || setting == 1 || (setting == -1 && group == 2);
}

// [1, T, HV, K] fp32 per v-head -> [1, T, H, K] in dtype (sum over the HV / H v-heads of a group)
Tensor group_sum(const Tensor& per_vhead, const GdnDims& d) {
  Tensor summed = per_vhead;
  if (d.HV != d.H) {
    Tensor grouped = torch::stable::view(per_vhead, {1, d.T, d.H, d.HV / d.H, kHeadDim});
    const int64_t group_dim[] = {3};
    summed = torch::stable::sum(grouped, torch::headeronly::IntHeaderOnlyArrayRef(group_dim, 1), false);
  }
  return torch::stable::to(summed, d.dtype);
}
}  // namespace

std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor, Tensor> gdn_bwd_cuda(
    Tensor q, Tensor k, Tensor v, Tensor g_cumsum, Tensor beta, Tensor A, Tensor do_, std::optional<Tensor> dht,
    double scale, std::optional<Tensor> initial_state, Tensor cu_seqlens, bool state_v_first,
    int64_t cp_segment_chunks, std::optional<Tensor> chunk_states, int64_t max_seqlen) {
  const GdnDims d = with_max_seqlen(
      kOp, check_gdn_inputs(kOp, q, k, v, "g_cumsum", g_cumsum, beta, initial_state, cu_seqlens, state_v_first),
      max_seqlen);
  check_cuda_contiguous(kOp, "A", A, d.device);
  check_dtype(kOp, "A", A, d.dtype);
  check_shape(kOp, "A", A, {1, d.T, d.HV, kChunk}, "[1, T, HV, 64]");
  check_cuda_contiguous(kOp, "do", do_, d.device);
  check_dtype(kOp, "do", do_, d.dtype);
  check_shape(kOp, "do", do_, {1, d.T, d.HV, kHeadDim}, "[1, T, HV, V] (as v)");
  if (dht.has_value()) {
    check_cuda_contiguous(kOp, "dht", *dht, d.device);
    check_dtype(kOp, "dht", *dht, ScalarType::Float);
    check_shape(kOp, "dht", *dht, {d.N, d.HV, kHeadDim, kHeadDim}, state_v_first ? "[N, HV, V, K]" : "[N, HV, K, V]");
  }
  if (chunk_states.has_value()) {
    check_cuda_contiguous(kOp, "chunk_states", *chunk_states, d.device);
    check_dtype(kOp, "chunk_states", *chunk_states, d.dtype);
    check_shape(kOp, "chunk_states", *chunk_states, {d.num_slots(), d.HV, kHeadDim, kHeadDim},
                "[ceil(T / 64) + N, HV, K, V] (gdn_fwd's output_chunk_states)");
  }

  torch::stable::accelerator::DeviceGuard guard(d.device);
  // the chunk gradient: the small-group variant of the smallest key gmax >= HV / H where the build has one (sm90:
  // gmax 1 loads dS1 and dO after Q and K, gmax 2 gives the producer warps more registers; with one or two v-heads
  // per CTA their loads are exposed; tilelang_src/variants.py), else the default
  const auto* small_group = static_cast<decltype(&gdn_bwd_chunk_variants[0])>(nullptr);
  for (int64_t gmax = d.HV / d.H; small_group == nullptr && gmax <= kSmallGroup; ++gmax) {
    small_group = find_variant_or_null(gdn_bwd_chunk_variants, d.device, dtype_key(d.dtype), 0,
                                       static_cast<int>(gmax));
  }
  const auto& chunk = small_group != nullptr
                          ? *small_group
                          : find_variant("gdn_bwd_chunk", gdn_bwd_chunk_variants, d.device, dtype_key(d.dtype), 0);
  // the fused backward where the build has it: at one v-head per qk-head, and at a group of G by its cluster variant
  // (key gmax == G exactly) as fused_at_group says. Both settings are checked on every call
  const int64_t group = d.HV / d.H;
  const bool fused_setting = fused_bwd_requested(), group_setting = fused_at_group(group);
  const bool fused_wanted = fused_setting && group_setting;
#ifdef FLASHQLA_HAS_GDN_BWD_FUSED
  const gdn_bwd_fused_variant* fused =
      fused_wanted ? find_variant_or_null(gdn_bwd_fused_variants, d.device, dtype_key(d.dtype), 0,
                                          static_cast<int>(group))
                   : nullptr;
#else
  const void* fused = nullptr;
  (void)fused_wanted;
#endif
  const bool summed = fused != nullptr || chunk_kernel_sums_groups(chunk.family);
  // dq and dk as the chunk kernel writes them: summed over each group in q's dtype, or per v-head in fp32
  Tensor dq_out = summed ? torch::stable::new_empty(q, {1, d.T, d.H, kHeadDim})
                       : torch::stable::new_empty(g_cumsum, {1, d.T, d.HV, kHeadDim});
  Tensor dk_out = summed ? torch::stable::new_empty(q, {1, d.T, d.H, kHeadDim})
                       : torch::stable::new_empty(g_cumsum, {1, d.T, d.HV, kHeadDim});
  Tensor dv = torch::stable::new_empty(v, {1, d.T, d.HV, kHeadDim});
  Tensor dg = torch::stable::new_empty(g_cumsum, {1, d.T, d.HV});
  Tensor dbeta = torch::stable::new_empty(g_cumsum, {1, d.T, d.HV});
  Tensor dh0 = torch::stable::new_empty(g_cumsum, {initial_state.has_value() ? d.N : 0, d.HV, kHeadDim, kHeadDim});
  poison({&dq_out, &dk_out, &dv, &dg, &dbeta, &dh0});

  if (d.T == 0 || d.N == 0) {  // no token is part of a sequence: only the state passes through
    for (Tensor* t : {&dq_out, &dk_out, &dv, &dg, &dbeta}) torch::stable::zero_(*t);
    if (initial_state.has_value()) {
      if (dht.has_value()) {
        torch::stable::copy_(dh0, *dht);
      } else {
        torch::stable::zero_(dh0);
      }
    }
    if (summed) return {dq_out, dk_out, dv, dg, dbeta, dh0};
    return {group_sum(dq_out, d), group_sum(dk_out, d), dv, dg, dbeta, dh0};
  }
  for (auto [name, t] : {std::pair{"q", &q}, {"k", &k}, {"v", &v}, {"A", &A}, {"do", &do_}}) {
    check_aligned16(kOp, name, *t);
  }
  if (chunk_states.has_value()) check_aligned16(kOp, "chunk_states", *chunk_states);  // read by TMA
  void* stream = current_stream(d.device);
  char err[512] = {0};

  // the state-gradient pass's segments (step 2): its own warm-up share, fitted beside the recompute, or the
  // forward's when the states are kept (segment_plan.cpp). The recompute plans as the forward does (the same plan:
  // kept and recomputed states are the same bits); taking this plan's segment length instead was no faster over 56
  // shapes (H200_cp_sweep.md, "Refit")
  check_cp_segment_chunks(kOp, cp_segment_chunks);
  // (the fused backward's main pass takes about six times a chunk of the state-gradient pass: its plan splits more)
  const SegmentPlan sp =
      fused != nullptr
          ? plan_bwd_fused(d.T, d.N, d.HV, d.max_seqlen, sm_count(d.device), cp_segment_chunks,
                           chunk_states.has_value())
          : plan_bwd_dh(d.T, d.N, d.HV, d.max_seqlen, kHeadDim / kBlockV, sm_count(d.device), cp_segment_chunks,
                        chunk_states.has_value());

  // 1. the state at the start of every chunk, by chunk slot: the forward's, or recomputed (launched below). Step 2
  // does not read them, so the recompute runs on a side stream beside it (a sequential pass with few heads leaves most
  // SMs idle, above all during the correction walks); the chunk kernel (step 3) waits for both.
  Tensor h = chunk_states.has_value() ? *chunk_states
                                      : torch::stable::new_empty(q, {d.num_slots(), d.HV, kHeadDim, kHeadDim});
  std::vector<Tensor> side_workspace;  // the recompute's temporaries, freed only after the join below
  StreamJoin join{stream, stream};
  auto launch_recompute = [&]() {
    if (chunk_states.has_value()) return;
    if (!single_stream()) {
      join.side = side_stream(d.device);
      stream_wait(join.side, stream);  // the side stream starts after the work already on this one
    }
    FwdOutputs recompute;
    recompute.h = &h;
    launch_fused_fwd(kOp, d, q, k, v, A, nullptr, g_cumsum, beta, cu_seqlens, initial_state, scale, state_v_first,
                     recompute, cp_segment_chunks, join.side, &side_workspace);
  };
  // Where the recompute forks: before this pass's segment tables (default), or after them with
  // FLASHQLA_BWD_FORK_AFTER_TABLES=1 (41st session, benchmarks/results/s41/README.md: in a graph replay at (4, 8)
  // 1x8192 the tables' kernel waited 17 us for an SM behind the recompute's warm-up, which had taken them all; after
  // this pass's warm-up instead the recompute became the longer chain, 1.04x the backward's time)
  const bool after_tables = bwd_fork_after_tables_requested();
  if (!after_tables) launch_recompute();

  // 2. the gradient of the state at the end of every chunk (reverse recurrence, by segment: the backward's own
  // segment tables), and dh0; the fused backward keeps it in the kernel (no dh)
  const auto& dh_kernel = find_variant("gdn_bwd_dh", gdn_bwd_dh_variants, d.device, dtype_key(d.dtype), kBlockV);
  const SegmentTables st = make_segment_tables(kOp, d, sp, g_cumsum, cu_seqlens, cp_segment_chunks, true, stream);
  if (after_tables) launch_recompute();
  void* unused = g_cumsum.data_ptr();
  const bool has_states = initial_state.has_value() || dht.has_value();
  const int64_t num_states = has_states ? d.N : 0;
  const int64_t segs = st.sp.num_segs;
  std::optional<Tensor> cp_ds;
  if (st.sp.cp) {
    // warm-up: every segment's end gradient from the next segment's first chunks, and the fallback
    // segments' transposed transitions; then the correction, last segment first. dh is absent (`unused`) with one
    // slot: a variant that stores it by TMA encodes its descriptor, which cannot have a dimension of 0
    Tensor cp_out = torch::stable::new_empty(g_cumsum, {2 * segs, d.HV, kHeadDim, kHeadDim});
    const Correction how = choose_correction(d);
    int rc = dh_kernel.fn(q.data_ptr(), k.data_ptr(), do_.data_ptr(), A.data_ptr(), g_cumsum.data_ptr(), beta.data_ptr(),
                          cu_seqlens.data_ptr(), unused, unused, unused, st.seg_seq.data_ptr(), st.ranges.data_ptr(),
                          unused, cp_out.data_ptr(), static_cast<float>(scale), 0, 0, state_v_first, how.warmup(),
                          group_size(d),
                          d.T, d.H, d.HV, d.N + 1, 0, 1, segs, st.range_rows, 2 * segs, stream, err, sizeof(err));
    STD_TORCH_CHECK(rc == 0, kOp, ": kernel launch failed: ", err);
    cp_ds = correct_segments(kOp, d, st, cu_seqlens, cp_out, dht, state_v_first, true, how, stream);
  }
#ifdef FLASHQLA_HAS_GDN_BWD_FUSED
  if (fused != nullptr) {
    // 2 + 3 in one kernel, after the recompute: every token's gradients and dh0, one CTA per segment and v-head
    join.join();
    side_workspace.clear();
    int rc = fused->fn(q.data_ptr(), k.data_ptr(), v.data_ptr(), do_.data_ptr(), A.data_ptr(), g_cumsum.data_ptr(),
                   beta.data_ptr(), cu_seqlens.data_ptr(), h.data_ptr(), dht ? dht->data_ptr() : unused,
                   st.seg_seq.data_ptr(), st.ranges.data_ptr(), cp_ds ? cp_ds->data_ptr() : unused, dq_out.data_ptr(),
                   dk_out.data_ptr(), dv.data_ptr(), dg.data_ptr(), dbeta.data_ptr(),
                   initial_state ? dh0.data_ptr() : unused, static_cast<float>(scale), dht.has_value(),
                   initial_state.has_value(), state_v_first, d.T, d.H, d.HV, d.N + 1, d.num_slots(), num_states,
                   segs, st.range_rows, stream, err, sizeof(err));
    STD_TORCH_CHECK(rc == 0, kOp, ": kernel launch failed: ", err);
    return {dq_out, dk_out, dv, dg, dbeta, dh0};
  }
#endif
  Tensor dh = torch::stable::new_empty(q, {d.num_slots(), d.HV, kHeadDim, kHeadDim});
  int rc = dh_kernel.fn(q.data_ptr(), k.data_ptr(), do_.data_ptr(), A.data_ptr(), g_cumsum.data_ptr(), beta.data_ptr(),
                        cu_seqlens.data_ptr(), dht ? dht->data_ptr() : unused, dh.data_ptr(),
                        initial_state ? dh0.data_ptr() : unused, st.seg_seq.data_ptr(), st.ranges.data_ptr(),
                        cp_ds ? cp_ds->data_ptr() : unused, unused, static_cast<float>(scale), dht.has_value(),
                        initial_state.has_value(), state_v_first, 0, group_size(d), d.T, d.H, d.HV, d.N + 1, num_states,
                        d.num_slots(), segs, st.range_rows, segs, stream, err, sizeof(err));
  STD_TORCH_CHECK(rc == 0, kOp, ": kernel launch failed: ", err);
  cp_ds.reset();  // back to the caching allocator (stream-ordered) before the chunk kernel's peak
  join.join();  // the recomputed states are in h
  side_workspace.clear();  // ordered before the chunk kernel by the join: its blocks may serve this stream now

  // 3. every token's gradients, chunk-parallel
  rc = chunk.fn(q.data_ptr(), k.data_ptr(), v.data_ptr(), do_.data_ptr(), A.data_ptr(), g_cumsum.data_ptr(),
                beta.data_ptr(), cu_seqlens.data_ptr(), h.data_ptr(), dh.data_ptr(), dq_out.data_ptr(), dk_out.data_ptr(),
                dv.data_ptr(), dg.data_ptr(), dbeta.data_ptr(), static_cast<float>(scale), group_size(d), d.T, d.H,
                d.HV, d.N + 1, d.num_slots(), stream, err, sizeof(err));
  STD_TORCH_CHECK(rc == 0, kOp, ": kernel launch failed: ", err);
  if (summed) return {dq_out, dk_out, dv, dg, dbeta, dh0};
  return {group_sum(dq_out, d), group_sum(dk_out, d), dv, dg, dbeta, dh0};
}

}  // namespace flashqla
