#include "segment_plan.h"

#include <algorithm>
#include <cmath>

namespace flashqla {

namespace {
constexpr int64_t kChunkTokens = 64;
constexpr int64_t kMinSegChunks = 4;
// Costs in chunk times of the sequential kernels (one CTA per SM), fitted to forced segment lengths on an
// H200 (benchmarks/cp_sweep.py; benchmarks/results/H200_cp_sweep.md). The warm-up pass is as long as a main pass
// for the heads without decay, whose exact fallback runs the whole segment in two CTAs (end state and
// transition matrix), and a few chunks for the others: modeled as a quarter of the heads without decay
// (the benchmark's inputs, anchors.md), so 2 * kFallbackShare CTAs per segment and head running L chunks.
// One correction step (a 128 x 128 transition read and applied) costs about a chunk and a half.
constexpr double kFallbackShare = 0.25;
constexpr double kCorrectionStep = 1.5;
// CP must beat the single-segment estimate by this factor to be chosen
constexpr double kMinGain = 0.9;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Time model in chunk times, assuming N equally long sequences (the host does not read the lengths): a pass
// over segments of L chunks with C CTAs takes L * ceil(C / sms).
struct CostModel {
  int64_t T, N, heads;  // heads: CTAs per segment (v-heads times V slices)
  int sms;
  int64_t chunks() const { return std::max<int64_t>(ceil_div(T, kChunkTokens) / std::max<int64_t>(N, 1), 1); }
  double waves(double ctas) const { return std::ceil(ctas / sms); }
  double one_segment() const { return double(chunks()) * waves(double(N * heads)); }
  // segments of L chunks: the warm-up pass, the main pass and the corrections
  double segmented(int64_t L) const {
    const int64_t segs = ceil_div(chunks(), L);
    const double ctas = double(N * segs * heads);
    return double(L) * (waves(ctas) + waves(2 * kFallbackShare * ctas)) + double(segs) * kCorrectionStep;
  }
};

SegmentPlan single_segment(int64_t T, int64_t N, const CostModel& m) {
  SegmentPlan p;
  p.seg_tokens = std::max<int64_t>(ceil_div(T, kChunkTokens), 1) * kChunkTokens;
  p.num_segs = ceil_div(T, p.seg_tokens) + N;
  p.cost = m.one_segment();
  return p;
}

SegmentPlan segments_of(int64_t T, int64_t N, int64_t seg_chunks, const CostModel& m) {
  SegmentPlan p;
  p.cp = true;
  p.seg_tokens = seg_chunks * kChunkTokens;
  p.num_segs = ceil_div(T, p.seg_tokens) + N;
  p.cost = m.segmented(seg_chunks);
  return p;
}
}  // namespace

SegmentPlan plan_segments(int64_t T, int64_t N, int64_t HV, int64_t ctas_per_head, int sms,
                          int64_t cp_segment_chunks) {
  const CostModel m{T, N, HV * ctas_per_head, sms};
  if (cp_segment_chunks == 0 || N == 0 || T == 0) return single_segment(T, N, m);
  if (cp_segment_chunks > 0) return segments_of(T, N, cp_segment_chunks, m);

  double best = m.one_segment() * kMinGain;
  int64_t best_chunks = 0;
  for (int64_t L = kMinSegChunks; L < m.chunks(); L *= 2) {
    if (2 * (ceil_div(T, L * kChunkTokens) + N) > kMaxGridRows) continue;  // the warm-up pass's rows
    const double cost = m.segmented(L);
    if (cost < best) {
      best = cost;
      best_chunks = L;
    }
  }
  return best_chunks > 0 ? segments_of(T, N, best_chunks, m) : single_segment(T, N, m);
}

FwdPlan plan_fwd(int64_t T, int64_t N, int64_t HV, int sms, int64_t cp_segment_chunks, bool allow_bv128,
                 int forced_block_v) {
  const FwdPlan narrow{64, plan_segments(T, N, HV, 2, sms, cp_segment_chunks)};
  if (forced_block_v == 64 || (forced_block_v == 0 && !allow_bv128)) return narrow;
  const FwdPlan wide{128, plan_segments(T, N, HV, 1, sms, cp_segment_chunks)};
  if (forced_block_v == 128) return wide;
  return wide.sp.cost * kChunkTimeBv128 < narrow.sp.cost * kMinGain ? wide : narrow;  // the same margin as CP's
}

}  // namespace flashqla
