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

bool poison_outputs() {
  const char* v = std::getenv("FLASHQLA_POISON_OUTPUTS");
  return v != nullptr && v[0] != '\0' && v[0] != '0';
}

}  // namespace flashqla
