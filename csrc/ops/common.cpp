#include "common.h"

#include <cuda_runtime_api.h>

#include <atomic>

namespace flashqla {

int compute_capability(int32_t device) {
  static std::atomic<int> cache[64]{};  // 0: not queried yet
  if (device >= 0 && device < 64) {
    if (int v = cache[device].load(std::memory_order_relaxed)) return v;
  }
  int major = 0, minor = 0;
  cudaError_t e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
  STD_TORCH_CHECK(e == cudaSuccess, "flashqla: cudaDeviceGetAttribute failed: ", cudaGetErrorString(e));
  const int cc = major * 10 + minor;
  if (device >= 0 && device < 64) cache[device].store(cc, std::memory_order_relaxed);
  return cc;
}

bool poison_outputs() {
  const char* v = std::getenv("FLASHQLA_POISON_OUTPUTS");
  return v != nullptr && v[0] != '\0' && v[0] != '0';
}

}  // namespace flashqla
