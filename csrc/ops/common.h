// Helpers shared by the op implementations: argument checks with clear messages, the current
// CUDA stream, the device's compute capability. Stable-ABI torch only.
#pragma once

#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/accelerator.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/core/ScalarType.h>
#include <torch/headeronly/util/Exception.h>

#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <string>

// Declared weak: a CPU-only torch does not define it, and the library must still load there
// (the CPU path is the reference). CUDA builds of torch resolve it through libtorch.so.
extern "C" __attribute__((weak)) AOTITorchError aoti_torch_get_current_cuda_stream(int32_t device_index,
                                                                                  void** ret_stream);

namespace flashqla {

using torch::headeronly::ScalarType;
using torch::stable::Tensor;

inline const char* dtype_name(ScalarType t) {
  switch (t) {
    case ScalarType::BFloat16: return "bfloat16";
    case ScalarType::Half: return "float16";
    case ScalarType::Float: return "float32";
    case ScalarType::Double: return "float64";
    case ScalarType::Int: return "int32";
    case ScalarType::Long: return "int64";
    default: return "an unsupported dtype";
  }
}

// "bf16" / "fp16": the dtype key of the generated variant tables
inline const char* dtype_key(ScalarType t) {
  return t == ScalarType::BFloat16 ? "bf16" : (t == ScalarType::Half ? "fp16" : "");
}

inline std::string shape_str(const Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

inline void check_shape(const char* op, const char* name, const Tensor& t, std::initializer_list<int64_t> want,
                        const char* layout) {
  bool ok = t.dim() == static_cast<int64_t>(want.size());
  int64_t i = 0;
  for (int64_t w : want) ok = ok && t.size(i++) == w;
  STD_TORCH_CHECK(ok, op, ": ", name, " must have shape ", layout, ", got ", shape_str(t));
}

inline void check_dtype(const char* op, const char* name, const Tensor& t, ScalarType want) {
  STD_TORCH_CHECK(t.scalar_type() == want, op, ": ", name, " must be ", dtype_name(want), ", got ",
                  dtype_name(t.scalar_type()));
}

inline void check_cuda_contiguous(const char* op, const char* name, const Tensor& t, int32_t device) {
  STD_TORCH_CHECK(t.is_cuda(), op, ": ", name, " must be a CUDA tensor");
  STD_TORCH_CHECK(t.get_device_index() == device, op, ": ", name, " is on cuda:", t.get_device_index(),
                  " but q is on cuda:", device);
  STD_TORCH_CHECK(t.is_contiguous(), op, ": ", name, " must be contiguous");
}

inline void check_aligned16(const char* op, const char* name, const Tensor& t) {
  STD_TORCH_CHECK(reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0, op, ": ", name,
                  " must start at a 16-byte aligned address (the kernels load it with TMA)");
}

inline void* current_stream(int32_t device) {
  STD_TORCH_CHECK(aoti_torch_get_current_cuda_stream != nullptr,
                  "flashqla: this build of torch has no CUDA support");
  void* stream = nullptr;
  STD_TORCH_CHECK(aoti_torch_get_current_cuda_stream(device, &stream) == AOTI_TORCH_SUCCESS,
                  "flashqla: could not get the current CUDA stream");
  return stream;
}

// A second stream of a device, for work that may overlap the current stream's (created once per thread and
// device, non-blocking; work on it is ordered against other streams only by stream_wait)
void* side_stream(int32_t device);
// `waiter` runs what is enqueued on it next only after everything enqueued on `waited` so far (an event;
// legal while a CUDA graph is captured: the capture then follows the dependency into the other stream)
void stream_wait(void* waiter, void* waited);
// Before a launch on `stream` that uses memory allocated after the fork to it: if `stream` is not the device's
// current stream (a side stream), it first waits for everything enqueued on the current stream so far. The caching
// allocator hands a block back to the current stream's pool as soon as the host frees it, so with two threads on
// one stream a block whose last kernel (the other thread's) is still queued there could be written on the side
// stream under that kernel; a no-op on the current stream
void order_after_current(void* stream, int32_t device);
// FLASHQLA_SINGLE_STREAM=1: every launch of an op on the caller's stream, in the order before the side stream
// (same results bit for bit; benchmarks/streams_ab.py compares the two)
bool single_stream();
// FLASHQLA_PREP_GROUP=0: the forward's chunk prep with one v-head per CTA, also where a qk-head has several
// (the same outputs bit for bit, slower; tests/test_chunk_prep_gpu.py, benchmarks/prep_ab.py)
bool prep_group_enabled();

// Joins a side stream back into the main one: join() where the main stream needs the side's work, and on every
// exit (an error between fork and join must not leave the side's temporaries to be freed under running
// kernels). Declare it after the temporaries the side stream uses, so that it joins before they are freed.
struct StreamJoin {
  void* main;
  void* side;
  void join() {
    if (side != main) stream_wait(main, side);
    side = main;
  }
  ~StreamJoin() {
    try {
      join();
    } catch (...) {  // a destructor must not throw; the error surfaces at the next CUDA call
    }
  }
};

// compute capability of a device as major * 10 + minor (9.0 -> 90, 12.0 -> 120), cached per device
int compute_capability(int32_t device);
// number of streaming multiprocessors of a device (cached)
int sm_count(int32_t device);

// Debug knob used by the tests: FLASHQLA_POISON_OUTPUTS=1 fills every output with NaN before the
// kernels run, so an element they never write cannot pass a comparison on stale memory.
bool poison_outputs();
inline void poison(std::initializer_list<Tensor*> outputs) {
  if (!poison_outputs()) return;
  for (Tensor* t : outputs) {
    if (t->numel() > 0) torch::stable::fill_(*t, std::numeric_limits<double>::quiet_NaN());
  }
}

}  // namespace flashqla
