// Finds the generated kernel variant for a device and a request, or fails with a message that
// names the request, the variants compiled in and the GPU.
#pragma once

#include <cstring>
#include <string>

#include "common.h"
#include "flashqla_kernels.h"

namespace flashqla {

template <class Variant, size_t N>
const Variant& find_variant(const char* kernel, const Variant (&table)[N], int32_t device, const char* dtype,
                            int bv) {
  const int major = cc_major(device);
  for (const Variant& v : table) {
    if (v.cc_major == major && std::strcmp(v.dtype, dtype) == 0 && (bv == 0 || v.bv == bv)) return v;
  }
  std::string have;
  for (const Variant& v : table) {
    have += std::string(have.empty() ? "" : ", ") + "sm" + std::to_string(v.cc_major * 10) + "/" + v.dtype;
  }
  STD_TORCH_CHECK(false, "flashqla: no ", kernel, " kernel compiled for compute capability ", major,
                  ".x with dtype ", dtype, " (cuda:", device, "). Compiled in: ", have,
                  ". Supported GPUs: Hopper (sm90); on other devices use CPU tensors (the reference path).");
  return table[0];
}

}  // namespace flashqla
