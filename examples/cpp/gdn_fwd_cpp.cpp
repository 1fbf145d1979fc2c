// Calls flashqla::gdn_fwd from C++ through the dispatcher: loads the op library, builds a packed
// two-sequence problem from closed-form inputs (tests/test_callers_gpu.py builds the same ones),
// runs the op on the GPU and writes (o, final_state) with torch::jit::pickle_save.
//
//   gdn_fwd_cpp <path/to/libflashqla_ops.so> <out.pt>
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <dlfcn.h>

#include <cstdio>
#include <fstream>
#include <tuple>

namespace {

// the same closed form as make_closed_form_inputs() in tests/test_callers_gpu.py
at::Tensor wave(std::initializer_list<int64_t> shape, double freq, double phase) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return at::sin(at::arange(n, at::kDouble) * freq + phase).reshape(shape);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <libflashqla_ops.so> <out.pt>\n", argv[0]);
    return 2;
  }
  if (dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL) == nullptr) {
    std::fprintf(stderr, "dlopen failed: %s\n", dlerror());
    return 1;
  }
  const int64_t T = 200, H = 2, HV = 4, D = 128;
  const auto cuda = at::TensorOptions().device(at::kCUDA);
  at::Tensor q = (wave({1, T, H, D}, 0.37, 0.1) * 0.1).to(cuda.dtype(at::kBFloat16));
  at::Tensor k = (wave({1, T, H, D}, 0.53, 0.7) * 0.1).to(cuda.dtype(at::kBFloat16));
  at::Tensor v = wave({1, T, HV, D}, 0.29, 1.3).to(cuda.dtype(at::kBFloat16));
  at::Tensor g = (-(wave({1, T, HV}, 0.11, 0.5) + 1.0) * 0.2).to(cuda.dtype(at::kFloat));
  at::Tensor beta = (wave({1, T, HV}, 0.23, 0.9) * 0.4 + 0.5).to(cuda.dtype(at::kFloat));
  at::Tensor h0 = (wave({2, HV, D, D}, 0.013, 0.2) * 0.1).to(cuda.dtype(at::kFloat));
  at::Tensor cu = at::tensor({0, 77, 190}, at::kInt).to(at::kCUDA);

  auto op = c10::Dispatcher::singleton()
                .findSchemaOrThrow("flashqla::gdn_fwd", "")
                .typed<std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>(
                    const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                    double, const std::optional<at::Tensor>&, const at::Tensor&, bool, bool, int64_t, bool,
                    int64_t)>();
  // cp_segment_chunks = -1: the library decides on context parallelism; no chunk states kept (false); max_seqlen
  // = 113, the longer of the two sequences (a planning hint; 0 = unknown)
  auto [o, final_state, g_cumsum, A, chunk_states] =
      op.call(q, k, v, g, beta, 0.125, h0, cu, true, false, -1, false, 113);
  std::vector<char> bytes = torch::jit::pickle_save(c10::ivalue::Tuple::create({o.cpu(), final_state.cpu()}));
  std::ofstream(argv[2], std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  std::printf("gdn_fwd from C++: o %s, final_state %s, |o| = %.6f\n", c10::str(o.sizes()).c_str(),
              c10::str(final_state.sizes()).c_str(), o.to(at::kFloat).norm().item<double>());
  return 0;
}
