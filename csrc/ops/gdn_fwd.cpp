// torch.ops.flashqla.gdn_fwd on CUDA: checks, output allocation, two kernel launches
// (chunk prep, fused forward). Varlen form only; the Python API flattens dense batches.
#include <limits>

#include "common.h"
#include "dispatch.h"
#include "ops.h"

namespace flashqla {

namespace {
constexpr int64_t kHeadDim = 128;  // K = V = 128: the only head size the kernels are written for
constexpr int64_t kChunk = 64;
constexpr int kBlockV = 64;
constexpr const char* kOp = "flashqla::gdn_fwd";
}  // namespace

std::tuple<Tensor, Tensor, Tensor, Tensor> gdn_fwd_cuda(Tensor q, Tensor k, Tensor v, Tensor g, Tensor beta,
                                                        double scale, std::optional<Tensor> initial_state,
                                                        Tensor cu_seqlens, bool output_final_state,
                                                        bool state_v_first) {
  STD_TORCH_CHECK(q.is_cuda(), kOp, ": q must be a CUDA tensor");
  const int32_t device = q.get_device_index();
  for (auto [name, t] : {std::pair{"k", &k}, {"v", &v}, {"g", &g}, {"beta", &beta}, {"cu_seqlens", &cu_seqlens}}) {
    check_cuda_contiguous(kOp, name, *t, device);
  }
  check_cuda_contiguous(kOp, "q", q, device);
  const ScalarType dt = q.scalar_type();
  STD_TORCH_CHECK(dt == ScalarType::BFloat16 || dt == ScalarType::Half, kOp,
                  ": q must be bfloat16 or float16, got ", dtype_name(dt));
  check_dtype(kOp, "k", k, dt);
  check_dtype(kOp, "v", v, dt);
  check_dtype(kOp, "g", g, ScalarType::Float);
  check_dtype(kOp, "beta", beta, ScalarType::Float);
  check_dtype(kOp, "cu_seqlens", cu_seqlens, ScalarType::Int);

  STD_TORCH_CHECK(q.dim() == 4 && q.size(0) == 1, kOp, ": q must have shape [1, T, H, K], got ", shape_str(q));
  const int64_t T = q.size(1), H = q.size(2);
  STD_TORCH_CHECK(q.size(3) == kHeadDim, kOp, ": head size K must be 128, got ", q.size(3));
  check_shape(kOp, "k", k, {1, T, H, kHeadDim}, "[1, T, H, K] (as q)");
  STD_TORCH_CHECK(v.dim() == 4 && v.size(0) == 1 && v.size(1) == T, kOp, ": v must have shape [1, T, HV, V], got ",
                  shape_str(v));
  const int64_t HV = v.size(2);
  STD_TORCH_CHECK(v.size(3) == kHeadDim, kOp, ": head size V must be 128, got ", v.size(3));
  STD_TORCH_CHECK(H > 0 && HV % H == 0, kOp, ": the number of v heads (", HV,
                  ") must be a positive multiple of the number of q/k heads (", H, ")");
  check_shape(kOp, "g", g, {1, T, HV}, "[1, T, HV]");
  check_shape(kOp, "beta", beta, {1, T, HV}, "[1, T, HV]");
  STD_TORCH_CHECK(cu_seqlens.dim() == 1 && cu_seqlens.size(0) >= 1, kOp,
                  ": cu_seqlens must have shape [N + 1], got ", shape_str(cu_seqlens));
  const int64_t N = cu_seqlens.size(0) - 1;
  if (initial_state.has_value()) {
    check_cuda_contiguous(kOp, "initial_state", *initial_state, device);
    check_dtype(kOp, "initial_state", *initial_state, ScalarType::Float);
    check_shape(kOp, "initial_state", *initial_state, {N, HV, kHeadDim, kHeadDim},
                state_v_first ? "[N, HV, V, K]" : "[N, HV, K, V]");
  }
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  STD_TORCH_CHECK(T + N + kChunk <= kMax && HV * kHeadDim <= kMax, kOp,
                  ": too many tokens or heads for 32-bit token indices (T = ", T, ", HV = ", HV, ")");

  torch::stable::accelerator::DeviceGuard guard(device);
  Tensor o = torch::stable::new_empty(v, {1, T, HV, kHeadDim});
  Tensor g_cumsum = torch::stable::new_empty(g, {1, T, HV});
  Tensor A = torch::stable::new_empty(q, {1, T, HV, kChunk});
  Tensor final_state = torch::stable::new_empty(g, {output_final_state ? N : 0, HV, kHeadDim, kHeadDim});
  poison({&o, &g_cumsum, &A, &final_state});

  if (T == 0) {  // every sequence is empty: the final state is the initial state
    if (output_final_state) {
      if (initial_state.has_value()) {
        torch::stable::copy_(final_state, *initial_state);
      } else {
        torch::stable::zero_(final_state);
      }
    }
    return {o, final_state, g_cumsum, A};
  }
  for (auto [name, t] : {std::pair{"q", &q}, {"k", &k}, {"v", &v}, {"A", &A}, {"o", &o}}) {
    check_aligned16(kOp, name, *t);
  }

  void* stream = current_stream(device);
  const char* dkey = dtype_key(dt);
  const auto& prep = find_variant("gdn_chunk_prep", gdn_chunk_prep_variants, device, dkey, 0);
  const auto& fwd = find_variant("gdn_fwd", gdn_fwd_variants, device, dkey, kBlockV);
  char err[512] = {0};

  const int64_t num_slots = (T + kChunk - 1) / kChunk + N;
  int rc = prep.fn(k.data_ptr(), g.data_ptr(), beta.data_ptr(), cu_seqlens.data_ptr(), g_cumsum.data_ptr(),
                   A.data_ptr(), static_cast<int32_t>(num_slots), T, H, HV, N + 1, stream, err, sizeof(err));
  STD_TORCH_CHECK(rc == 0, kOp, ": kernel launch failed: ", err);

  if (N == 0) {  // no sequences: every token is padding
    torch::stable::zero_(o);
    return {o, final_state, g_cumsum, A};
  }
  void* h0 = initial_state.has_value() ? initial_state->data_ptr() : g_cumsum.data_ptr();  // unread if absent
  void* ht = output_final_state ? final_state.data_ptr() : g_cumsum.data_ptr();             // unwritten if absent
  const int64_t num_states = (initial_state.has_value() || output_final_state) ? N : 0;
  rc = fwd.fn(q.data_ptr(), k.data_ptr(), v.data_ptr(), A.data_ptr(), g_cumsum.data_ptr(), beta.data_ptr(),
              cu_seqlens.data_ptr(), h0, o.data_ptr(), ht, static_cast<float>(scale), initial_state.has_value(),
              output_final_state, state_v_first, T, H, HV, N + 1, num_states, stream, err, sizeof(err));
  STD_TORCH_CHECK(rc == 0, kOp, ": kernel launch failed: ", err);
  return {o, final_state, g_cumsum, A};
}

}  // namespace flashqla
