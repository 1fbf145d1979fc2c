// Shared by the GDN ops: the argument contract of the packed GDN tensors and the launches that
// both the forward and the backward (which recomputes per-chunk states) make.
#pragma once

#include <optional>
#include <vector>

#include "common.h"
#include "flashqla_kernels.h"
#include "segment_plan.h"

namespace flashqla {

constexpr int64_t kHeadDim = 128;  // K = V = 128: the only head size the kernels are written for
constexpr int64_t kChunk = 64;
constexpr int kBlockV = 64;

struct GdnDims {
  int32_t device;
  ScalarType dtype;
  int64_t T, H, HV, N;
  int64_t max_seqlen = 0;  // the longest sequence's tokens, a planning hint (0: unknown; with_max_seqlen)
  int64_t num_slots() const { return (T + kChunk - 1) / kChunk + N; }  // docs: "Chunk slots"
};

// d with the op's max_seqlen argument checked (0: unknown, else in [1, T]; an error names it). Only the segment plans
// read it (a shorter value than the real longest sequence changes the speed, never the results)
GdnDims with_max_seqlen(const char* op, GdnDims d, int64_t max_seqlen);

// v-heads per qk-head, a kernel argument: the kernels index heads by products, never divisions
inline int32_t group_size(const GdnDims& d) { return static_cast<int32_t>(d.HV / d.H); }

// Checks q, k, v [1, T, H|HV, 128], the fp32 per-token tensors (g or g_cumsum, beta),
// cu_seqlens [N + 1] int32 and the optional fp32 initial state; errors name the argument.
GdnDims check_gdn_inputs(const char* op, const Tensor& q, const Tensor& k, const Tensor& v, const char* g_name,
                         const Tensor& g, const Tensor& beta, const std::optional<Tensor>& initial_state,
                         const Tensor& cu_seqlens, bool state_v_first);

// The segment tables of one sequential pass (tilelang_src/sm90/seg_plan.py): the plan (segment length, with
// or without context parallelism) and, written on the device, every slot's sequence (seg_seq [num_segs]), the
// chunk range of every CTA row (ranges [rows, HV, 3]) and the warm-up lengths (cp_plan [num_segs, HV], only
// with CP). reverse: the backward's tables (a segment's warm-up runs the next segment's first chunks).
struct SegmentTables {
  SegmentPlan sp;
  int64_t range_rows;  // num_segs, or 3 * num_segs with CP (main pass, warm-up, transitions)
  Tensor seg_seq, ranges, cp_plan;
};
// sp: the plan (plan_segments, plan_fwd); cp_segment_chunks only names the request in errors
SegmentTables make_segment_tables(const char* op, const GdnDims& d, const SegmentPlan& sp, const Tensor& g_cumsum,
                                  const Tensor& cu_seqlens, int64_t cp_segment_chunks, bool reverse, void* stream);

// cp_segment_chunks in [-1, 2^24], or an error naming it
void check_cp_segment_chunks(const char* op, int64_t cp_segment_chunks);

// How context parallelism's correction runs on d's device, chosen once per pass: the scan where FLASHQLA_CP_SCAN=1 and
// the build has it, else the walk of FLASHQLA_WALK_BV's width; either one's variant that loads the transitions split
// unless FLASHQLA_WALK_SPLIT_M=0, where the build has it (split_m: the warm-up pass must then store them split)
struct Correction {
#ifdef FLASHQLA_HAS_GDN_CP_SCAN
  const gdn_cp_scan_variant* scan = nullptr;
#else
  const void* scan = nullptr;
#endif
  const gdn_cp_correct_variant* walk = nullptr;
  bool split_m = false;
  // the warm-up pass's `warmup` argument: 2 stores the transition matrices as bf16 high and low parts
  // (tilelang_src/common/bf16_split.py split_slots), 1 as fp32
  int warmup() const { return split_m ? 2 : 1; }
};
Correction choose_correction(const GdnDims& d);

// The correction of context parallelism (tilelang_src/sm90/cp_correct.py, or cp_scan.py): from the warm-up pass's
// outputs cp_out [2 num_segs, HV, K, V], every segment's start state (forward; start = h0) or end gradient (reverse;
// start = dht), [num_segs, HV, K, V] fp32. how: choose_correction's choice, made before the warm-up pass ran (its
// warmup() argument)
Tensor correct_segments(const char* op, const GdnDims& d, const SegmentTables& st, const Tensor& cu_seqlens,
                        const Tensor& cp_out, const std::optional<Tensor>& start, bool state_v_first, bool reverse,
                        const Correction& how, void* stream);

// Context parallelism's start states for a forward's main pass: the warm-up pass of a forward kernel (fn: gdn_fwd's
// launcher signature, which gdn_fwd_rs and gdn_fwd_noprep share; every segment's end state from zero, and the
// fallback segments' transition matrices) into cp_out [2 num_segs, HV, K, V], then the correction walk
// (correct_segments). a and z fill the kernel's A and Z slots, gates its g slot (g_cumsum, or the raw g where the kernel
// forms the cumsum itself), unused every pointer the pass does not read. workspace (if given) receives cp_out, the
// start states and the warm-up plan (launch_fused_fwd's workspace).
Tensor cp_start_states(const char* op, const GdnDims& d, gdn_fwd_launcher fn, const Tensor& q, const Tensor& k,
                       const Tensor& v, void* a, void* z, const Tensor& gates, const Tensor& beta,
                       const Tensor& cu_seqlens, const std::optional<Tensor>& initial_state, double scale,
                       bool state_v_first, const SegmentTables& st, void* unused, void* stream,
                       std::vector<Tensor>* workspace = nullptr);

struct FwdOutputs {
  Tensor* o = nullptr;            // [1, T, HV, V] or null (not stored)
  Tensor* final_state = nullptr;  // [N, HV, K, V] or null
  Tensor* h = nullptr;            // [num_slots, HV, K, V] per-chunk start states, or null
};

// Runs the fused forward (requires g_cumsum and A from the chunk-prep kernel): the segment plan,
// and with context parallelism the warm-up pass and the correction, then the main pass.
// cp_segment_chunks: -1 automatic, 0 off, > 0 forced segment length (see segment_plan.h).
// z: the chunk prep's Z, read only when out.o is set (nullptr otherwise). workspace (if given) receives the
// temporaries the launches use (segment tables, warm-up outputs, corrected start states), for a caller whose
// stream is not the current one: the caching allocator may hand a freed block to the current stream's next
// allocation, so they must outlive the caller's join of `stream` into the current stream.
void launch_fused_fwd(const char* op, const GdnDims& d, const Tensor& q, const Tensor& k, const Tensor& v,
                      const Tensor& A, const Tensor* z, const Tensor& g_cumsum, const Tensor& beta,
                      const Tensor& cu_seqlens, const std::optional<Tensor>& initial_state, double scale,
                      bool state_v_first, const FwdOutputs& out, int64_t cp_segment_chunks, void* stream,
                      std::vector<Tensor>* workspace = nullptr);

}  // namespace flashqla
