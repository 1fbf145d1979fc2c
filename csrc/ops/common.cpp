#include "common.h"

#include <cuda_runtime_api.h>

#include <atomic>

namespace flashqla {

namespace {
// a device attribute, queried once per device (devices beyond 64 are queried every time)
int cached_attribute(cudaDeviceAttr attr, std::atomic<int> (&cache)[64], int32_t device) {
  if (device >= 0 && device < 64) {
    if (int v = cache[device].load(std::memory_order_relaxed)) return v;
  }
  int value = 0;
  cudaError_t e = cudaDeviceGetAttribute(&value, attr, device);
  STD_TORCH_CHECK(e == cudaSuccess, "flashqla: cudaDeviceGetAttribute failed: ", cudaGetErrorString(e));
  if (device >= 0 && device < 64) cache[device].store(value, std::memory_order_relaxed);
  return value;
}
}  // namespace

int compute_capability(int32_t device) {
  static std::atomic<int> major_cache[64]{}, minor_cache[64]{};  // 0: not queried yet (minor 0 re-queries)
  return cached_attribute(cudaDevAttrComputeCapabilityMajor, major_cache, device) * 10 +
         cached_attribute(cudaDevAttrComputeCapabilityMinor, minor_cache, device);
}

int sm_count(int32_t device) {
  static std::atomic<int> cache[64]{};
  return cached_attribute(cudaDevAttrMultiProcessorCount, cache, device);
}

void* side_stream(int32_t device) {
  // one per thread and device: an op's fork and join never interleave with another thread's (whose stream may be
  // under CUDA graph capture: work it put on a shared side stream would join that capture); autograd runs a
  // device's backward ops on one engine thread, so this is one stream per device in training
  thread_local void* streams[64] = {};
  STD_TORCH_CHECK(device >= 0 && device < 64, "flashqla: device index ", device, " out of range for the side stream");
  if (streams[device] == nullptr) {
    int previous = -1;
    cudaError_t e = cudaGetDevice(&previous);
    if (e == cudaSuccess && previous != device) e = cudaSetDevice(device);
    cudaStream_t s = nullptr;
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (previous >= 0 && previous != device) cudaSetDevice(previous);
    STD_TORCH_CHECK(e == cudaSuccess, "flashqla: could not create a side stream: ", cudaGetErrorString(e));
    streams[device] = s;
  }
  return streams[device];
}

void stream_wait(void* waiter, void* waited) {
  if (waiter == waited) return;
  cudaEvent_t ev = nullptr;
  cudaError_t e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
  if (e == cudaSuccess) e = cudaEventRecord(ev, static_cast<cudaStream_t>(waited));
  if (e == cudaSuccess) e = cudaStreamWaitEvent(static_cast<cudaStream_t>(waiter), ev, 0);
  if (ev != nullptr) cudaEventDestroy(ev);  // released once the recorded work completes
  STD_TORCH_CHECK(e == cudaSuccess, "flashqla: cross-stream wait failed: ", cudaGetErrorString(e));
}

void order_after_current(void* stream, int32_t device) { stream_wait(stream, current_stream(device)); }

bool single_stream() {
  const char* v = std::getenv("FLASHQLA_SINGLE_STREAM");
  return v != nullptr && v[0] != '\0' && v[0] != '0';
}

bool prep_group_enabled() {
  const char* v = std::getenv("FLASHQLA_PREP_GROUP");
  return v == nullptr || v[0] != '0';  // unset, empty or anything but 0: several v-heads per CTA
}

bool poison_outputs() {
  const char* v = std::getenv("FLASHQLA_POISON_OUTPUTS");
  return v != nullptr && v[0] != '\0' && v[0] != '0';
}

}  // namespace flashqla
