// How the sequential kernels split sequences into segments (intra-card context parallelism).
// The host decides only the segment length, from sizes it knows without reading cu_seqlens;
// which segment belongs to which sequence, and how long each warm-up is, is decided on the
// device (tilelang_src/sm90/seg_plan.py). Derivation: docs/gdn_chunk_derivation.md, "Segments".
#pragma once

#include <cstdint>

namespace flashqla {

// The sequential kernels run one CTA row per segment slot on blockIdx.z (the row is the slowest grid index,
// so that a sequence's CTAs start together), and the warm-up pass runs two rows per slot: at most this many.
constexpr int64_t kMaxGridRows = 65535;

struct SegmentPlan {
  bool cp = false;         // several segments per sequence: warm-up pass + correction run
  int64_t seg_tokens = 0;  // segment length in tokens, a multiple of the chunk size
  int64_t num_segs = 0;    // segment slots: ceil(T / seg_tokens) + N
  double cost = 0;         // the model's time of the passes, in chunk times of the sequential kernel
};

// The cost model's constants, in chunk times of the sequential kernels (segment_plan.cpp: how they were fitted)
struct SegmentModel {
  double fallback_share;   // share of the heads whose warm-up runs the whole segment (exact fallback)
  double correction_step;  // one step of the correction walk
};

// cp_segment_chunks: -1 chooses automatically, 0 keeps every sequence in one segment,
// > 0 forces segments of that many chunks (tests, tuning). ctas_per_head: V slices per head. max_seqlen: the longest
// sequence's tokens when the caller knows it (the op's hint), 0 when not.
SegmentPlan plan_segments(int64_t T, int64_t N, int64_t HV, int64_t max_seqlen, int64_t ctas_per_head, int sms,
                          int64_t cp_segment_chunks, const SegmentModel& model);

// The backward's state-gradient pass: its own warm-up share (segment_plan.cpp) with the forward's recompute beside it,
// the forward's share when the caller passed the forward's chunk states (states_kept: no recompute)
SegmentPlan plan_bwd_dh(int64_t T, int64_t N, int64_t HV, int64_t max_seqlen, int64_t ctas_per_head, int sms,
                        int64_t cp_segment_chunks, bool states_kept);

// The fused backward's segments (tilelang_src/sm90/gdn_bwd_fused.py: one CTA per segment and v-head, whose chunk takes
// kFusedBwdChunkTime chunk times of the state-gradient pass), with the state-gradient pass's warm-up (two V slices per
// head) and correction. A chunk of the fused kernel at (32, 32) and (16, 16) on an H200: 12.8 us
// (benchmarks/fused_bwd_check.py, H200_fused_bwd_dl.log: 1633 us for 128 chunks per CTA in one wave), against about
// 2.1 us of the state-gradient pass (H200_profile_a993033.md: 0.53 ms for two waves of 128 chunks)
constexpr double kFusedBwdChunkTime = 6.0;
SegmentPlan plan_bwd_fused(int64_t T, int64_t N, int64_t HV, int64_t max_seqlen, int sms, int64_t cp_segment_chunks,
                           bool states_kept);

// The fused forward's V-slice width, 64 (two CTAs per head and segment) or 128 (one, whose chunk takes
// kChunkTimeBv128 chunk times of the 64-wide kernel), with its segment plan: 128 where allowed and the model
// prices it lower by CP's margin (kMinGain); forced_block_v (32, 64 or 128; 0: none) overrides the choice.
// 32 (four CTAs per head and segment) where allow_bv32 and the 64-wide plan has one segment per sequence with
// N * HV * 4 <= sms (half the SMs idle at 64), before the 128-wide choice (which needs the SMs filled). 47th
// session, H100, flashqla alone (benchmarks/results/s47/README.md): the forward 0.865-0.941x its time at the nine
// single-sequence shapes of (32, 32), (16, 32), (8, 24) with 2048-8192 tokens, 0.872-0.904x at (2, 8) 8192x4 and
// 2048x4, (16, 16) and (4, 16) 4096+4096; forced where CP splits sequences or the heads fill the SMs, 1.07-1.37x.
// The backward's state recompute (which stores the chunk states) keeps 64: the training step at (32, 32) and
// (16, 32) with both forced to 32 took 1.03-1.06x.
// Measured on an H200 (ablate.py, fwd against fwd128, o stored; benchmarks/results/H200_fwd_bv128.md): 1.6-1.8
// (4.45-4.71 against 2.65-2.76 us per chunk), 1.64-1.68 since the W fix (3.10-3.24 against 1.85-1.98). 1.75 with
// CP's margin keeps BV = 64 where CP splits a few long sequences, where the model's CP estimate is coarse.
constexpr double kChunkTimeBv128 = 1.75;
struct FwdPlan {
  int block_v = 64;
  SegmentPlan sp;
};
FwdPlan plan_fwd(int64_t T, int64_t N, int64_t HV, int64_t max_seqlen, int sms, int64_t cp_segment_chunks,
                 bool allow_bv128, int forced_block_v, bool allow_bv32 = false);

}  // namespace flashqla
