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
};

// cp_segment_chunks: -1 chooses automatically, 0 keeps every sequence in one segment,
// > 0 forces segments of that many chunks (tests, tuning).
SegmentPlan plan_segments(int64_t T, int64_t N, int64_t HV, int64_t ctas_per_head, int sms,
                          int64_t cp_segment_chunks);

}  // namespace flashqla
