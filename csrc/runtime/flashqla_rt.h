// Launch runtime included by every generated kernel TU. Torch-free: CUDA runtime and driver only.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace flashqla::rt {

// cuTensorMapEncodeTiled through the runtime's driver entry point, looked up once, so the
// library never links libcuda and never pays a lookup per descriptor per call.
inline void* driver_entry_point(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status{};
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &status) != cudaSuccess ||
      status != cudaDriverEntryPointSuccess) {
    return nullptr;
  }
  return fn;
}

struct EncodeTiled {
  template <class... Args>
  CUresult operator()(Args... args) const {
    static auto fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(driver_entry_point("cuTensorMapEncodeTiled"));
    return fn ? fn(args...) : CUDA_ERROR_NOT_FOUND;
  }
};
inline EncodeTiled encode_tiled() { return {}; }

// init() raises the dynamic shared-memory limit of a kernel; that attribute is per device.
struct PerDeviceOnce {
  static constexpr int kMaxDevices = 64;
  std::atomic<int> done[kMaxDevices]{};
  std::mutex mu;
  template <class F>
  int run(F&& f) {
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kMaxDevices) return f();
    if (done[dev].load(std::memory_order_acquire)) return 0;
    std::lock_guard<std::mutex> lock(mu);
    if (done[dev].load(std::memory_order_relaxed)) return 0;
    int rc = f();
    if (rc == 0) done[dev].store(1, std::memory_order_release);
    return rc;
  }
};

// Programmatic dependent launch (tilelang_src/common/grid_dependency.py) for the kernels that wait on it: 1 (on) when
// FLASHQLA_PDL is unset, empty or 1, 0 when it is 0, -1 for anything else (the launcher then fails, naming the
// variable); read once per process. Off, such a kernel launches after the one before it has completed and its
// grid-dependency wait returns at once: the same results, a plain launch's timing (for A/B measurements).
inline int pdl_setting() {
  static const int on = [] {
    const char* v = std::getenv("FLASHQLA_PDL");
    if (v == nullptr || v[0] == '\0' || (v[0] == '1' && v[1] == '\0')) return 1;
    return (v[0] == '0' && v[1] == '\0') ? 0 : -1;
  }();
  return on;
}

inline void copy_error(char* err, int errlen, const char* symbol, const char* what) {
  if (err != nullptr && errlen > 0) std::snprintf(err, static_cast<size_t>(errlen), "%s: %s", symbol, what);
}

}  // namespace flashqla::rt
