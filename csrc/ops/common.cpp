#include "common.h"

#include <cuda_runtime_api.h>

#include <atomic>

namespace flashqla {

int cc_major(int32_t device) {
  static std::atomic<int> cache[64]{};  // 0: not queried yet
  if (device >= 0 && device < 64) {
    if (int v = cache[device].load(std::memory_order_relaxed)) return v;
  }
  int major = 0;
  cudaError_t e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  STD_TORCH_CHECK(e == cudaSuccess, "flashqla: cudaDeviceGetAttribute failed: ", cudaGetErrorString(e));
  if (device >= 0 && device < 64) cache[device].store(major, std::memory_order_relaxed);
  return major;
}

bool poison_outputs() {
  const char* v = std::getenv("FLASHQLA_POISON_OUTPUTS");
  return v != nullptr && v[0] != '\0' && v[0] != '0';
}

}  // namespace flashqla
