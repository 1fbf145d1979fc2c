// Finds the generated kernel variant for a device and a request, or fails with a message that
// names the GPU, the request and the architectures compiled in.
//
// A device runs the kernel family named after its compute capability (9.0 -> sm90, 10.0 -> sm100,
// 12.0 -> sm120; tilelang_src/variants.py), compiled for exactly that capability ('a' targets do
// not run on other minors, so a CC 10.3 GPU finds no sm_100a kernel). FLASHQLA_KERNEL_FAMILY picks
// another family where a build has one for the device: check builds (FLASHQLA_CHECK_FAMILIES) carry
// the sm100 and sm120 programs compiled for sm_90a, so that Hopper can test them.
#pragma once

#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>

#include "common.h"
#include "flashqla_kernels.h"

namespace flashqla {

// "sm90" for CC 9.0, "sm120" for CC 12.0, ...; FLASHQLA_KERNEL_FAMILY when set (read on every call)
inline std::string kernel_family(int cc) {
  const char* forced = std::getenv("FLASHQLA_KERNEL_FAMILY");
  if (forced != nullptr && forced[0] != '\0') return forced;
  return "sm" + std::to_string(cc);
}

// "sm_90a, sm_100a, sm_120a" (+ "sm_90a running the sm120 family" for check variants), in table order
template <class Variant, size_t N>
std::string compiled_list(const Variant (&table)[N]) {
  std::string out;
  for (size_t i = 0; i < N; ++i) {
    const Variant& v = table[i];
    std::string item = v.arch;
    if ("sm" + std::to_string(v.cc) != v.family) item += std::string(" running the ") + v.family + " family";
    if (out.find(item) == std::string::npos) out += (out.empty() ? "" : ", ") + item;
  }
  return out;
}

// The variant for the device's family and dtype, of V-slice width bv (any when bv is 0), group bound gmax (0: the
// kernel's default variant, for any group; tilelang_src/variants.py's EXTRA_PROGRAMS) and split_m (1: the correction
// walk that loads the transitions split), or nullptr
template <class Variant, size_t N>
const Variant* find_variant_or_null(const Variant (&table)[N], int32_t device, const char* dtype, int bv,
                                    int gmax = 0, int split_m = 0) {
  const int cc = compute_capability(device);
  const std::string family = kernel_family(cc);
  for (const Variant& v : table) {
    if (v.cc == cc && family == v.family && std::strcmp(v.dtype, dtype) == 0 && (bv == 0 || v.bv == bv) &&
        v.gmax == gmax && v.split_m == split_m) {
      return &v;
    }
  }
  return nullptr;
}

// A setting from the environment (read on every call) that is one of the integers `allowed`: its value, or `unset` when
// unset or empty; any other value fails the call naming the variable ("flashqla: NAME must be a, b or c, got '...'")
inline int env_setting_of(const char* name, std::initializer_list<int> allowed, int unset) {
  const char* s = std::getenv(name);
  if (s == nullptr || s[0] == '\0') return unset;
  const std::string v = s;
  std::string choices;
  size_t i = 0;
  for (const int a : allowed) {
    if (v == std::to_string(a)) return a;
    choices += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + std::to_string(a);
    ++i;
  }
  STD_TORCH_CHECK(false, "flashqla: ", name, " must be ", choices, ", got '", v, "'");
  return unset;
}

// The same for two integers a and b ("flashqla: NAME must be a or b, got '...'")
inline int env_setting_of_two(const char* name, int a, int b, int unset) { return env_setting_of(name, {a, b}, unset); }

// FLASHQLA_FWD_BLOCK_V (read on every call): 32, 64 or 128 forces the fused forward's V-slice width, 0 when unset; any
// other value fails the call naming the variable. 32 (four CTAs per head and segment) and 128 exist in the sm90
// family only
inline int fwd_block_v_override() { return env_setting_of("FLASHQLA_FWD_BLOCK_V", {32, 64, 128}, 0); }

// FLASHQLA_WALK_BV (read on every call): 32 or unset runs context parallelism's correction walk (cp_correct.py) with a
// 32-wide V slice where the build has that variant (sm90; four CTAs per head and sequence, half the products each;
// elsewhere the 64-wide one), 64 the 64-wide walk (gdn_common.cpp correct_segments). 32 by default since the 42nd
// session: on an H100 the backward took 0.987x and the forward 0.977x the 64-wide walk's time by geomean
// (benchmarks/results/s42/README.md)
inline int walk_block_v() { return env_setting_of_two("FLASHQLA_WALK_BV", 32, 64, 32); }

// A 0/1 setting from the environment (read on every call): 1 or 0 as set, -1 unset or empty; any other value fails
// the call naming the variable
inline int env_setting_01(const char* name) { return env_setting_of_two(name, 0, 1, -1); }

// FLASHQLA_FWD_RS (read on every call): "1" runs the forward's main pass (without chunk states stored) by the
// register-operand forward (tilelang_src/sm90/gdn_fwd_rs.py) of the width the plan chose, "0" or unset by the default
// kernel. Off by default: with early_release its kernel takes 0.92x / 0.98x the default's time per chunk at BV = 64
// (H100, ablate.py, (32, 32) / (128, 128)), but the op's forward the same time (geomean 1.000x over twelve shapes,
// 0.98-1.025x; the training step 0.99-1.01x; benchmarks/results/s30/README.md), and at BV = 128 it is slower
inline bool fwd_rs_requested() { return env_setting_01("FLASHQLA_FWD_RS") == 1; }

// FLASHQLA_FWD_NOPREP (read on every call): where flashqla::gdn_prefill runs the forward without the chunk prep
// (tilelang_src/sm90/gdn_fwd_noprep.py), which it can where the forward's plan has one segment per sequence at the
// 128-wide V slice: 1 or unset (-1 here) there, 0 never. Since math_pair (e5993f3) at any group of v-heads per qk-head
// (measured 0.79-0.98x the prep path's time at (16, 32), (8, 32), (16, 64) on an H100, 36th session; before it only
// one v-head per qk-head was faster: docs/fwd_noprep.md)
inline int fwd_noprep_setting() { return env_setting_01("FLASHQLA_FWD_NOPREP"); }

// FLASHQLA_TRAIN_NOPREP (read on every call): "1" runs flashqla::gdn_fwd (the forward whose A and g_cumsum the
// backward reads) as the chunk prep without Z (g_cumsum and A only, the same bits) and the prep-free forward for o
// and the final state, where gdn_prefill would run that kernel (noprep_plan) and no chunk states are asked for; "0"
// or unset: the whole chunk prep and the fused forward. Off: on an H100 (37th session,
// benchmarks/results/s37/README.md) the training step took 0.965-1.005x the default's time at one v-head per qk-head
// but 1.013-1.025x at (16, 32)
inline bool train_noprep_requested() { return env_setting_01("FLASHQLA_TRAIN_NOPREP") == 1; }

// FLASHQLA_CP_SCAN (read on every call): "1" forms context parallelism's segment start states (end gradients in the
// backward) by the log-depth scan (tilelang_src/sm90/cp_scan.py: ceil(log2(ceil(T / segment))) launches) instead of
// the walk of one step per segment (cp_correct.py), where the build has it (sm90); "0" or unset: the walk. Off: on an
// H100 (39th session, benchmarks/results/s39/README.md) its round took 14-15 us, three and a half walk steps, so it
// paid only where a sequence had about 16 maps or more ((2, 4) 1x32768: the backward 1.07x) and was 0.88-0.99x
// elsewhere
inline bool cp_scan_requested() { return env_setting_01("FLASHQLA_CP_SCAN") == 1; }

// FLASHQLA_WALK_SPLIT_M (read on every call): "1" or unset runs the correction walk's variant that loads the
// transition matrices already split into bf16 high and low parts (tilelang_src/sm90/cp_correct.py split_m; the
// warm-up pass stores them so, launched with warmup = 2: gdn_common.cpp choose_correction), where the build has it
// (sm90, the 32-wide walk), and with FLASHQLA_CP_SCAN=1 the scan's variant on split A (cp_scan_split.py); "0": the
// walk splits M at every step (the scan every round's A). The same bits.
// On: on an H100 (43rd session, benchmarks/results/s43/README.md) the backward took 0.979x (0.939-1.007x) and the
// forward 0.978x (0.934-1.011x) the plain walk's time by geomean over (4, 8), (2, 4), (8, 16) (and (2, 8) forward) x 4
// mixes
inline bool walk_split_m_requested() { return env_setting_01("FLASHQLA_WALK_SPLIT_M") != 0; }

// FLASHQLA_BWD_FORK_AFTER_TABLES (read on every call): "1" forks the backward's state recompute onto its side stream
// after the state gradient's segment tables, "0" or unset before them (gdn_bwd.cpp; off: 1.002x by geomean on an H100,
// benchmarks/results/s42/README.md)
inline bool bwd_fork_after_tables_requested() { return env_setting_01("FLASHQLA_BWD_FORK_AFTER_TABLES") == 1; }

template <class Variant, size_t N>
const Variant& find_variant(const char* kernel, const Variant (&table)[N], int32_t device, const char* dtype,
                            int bv) {
  if (const Variant* v = find_variant_or_null(table, device, dtype, bv)) return *v;
  const int cc = compute_capability(device);
  const std::string family = kernel_family(cc);
  const std::string gpu = "cuda:" + std::to_string(device) + " has compute capability " + std::to_string(cc / 10) +
                          "." + std::to_string(cc % 10) + " (sm_" + std::to_string(cc) + ")";
  if (family != "sm" + std::to_string(cc)) {
    STD_TORCH_CHECK(false, "flashqla: FLASHQLA_KERNEL_FAMILY=", family, " but this build has no ", family, " ",
                    kernel, " kernel for this GPU (", gpu, ", dtype ", dtype, "). Compiled in: ",
                    compiled_list(table), ". Check variants come from FLASHQLA_CHECK_FAMILIES at build time.");
  }
  STD_TORCH_CHECK(false, "flashqla: no ", kernel, " kernel for this GPU: ", gpu, ", dtype ", dtype,
                  ". This build has kernels for: ", compiled_list(table),
                  " (sm_90a: H100/H200, sm_100a: B200/GB200, sm_120a: RTX 50xx/RTX PRO 6000 Blackwell; "
                  "FLASHQLA_ARCHS chooses them at build time). CPU tensors run the reference path.");
  return table[0];
}

}  // namespace flashqla
