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

SegmentPlan single_segment(int64_t T, int64_t N) {
  SegmentPlan p;
  p.seg_tokens = std::max<int64_t>(ceil_div(T, kChunkTokens), 1) * kChunkTokens;
  p.num_segs = ceil_div(T, p.seg_tokens) + N;
  return p;
}

SegmentPlan segments_of(int64_t T, int64_t N, int64_t seg_chunks) {
  SegmentPlan p;
  p.cp = true;
  p.seg_tokens = seg_chunks * kChunkTokens;
  p.num_segs = ceil_div(T, p.seg_tokens) + N;
  return p;
}
}  // namespace

SegmentPlan plan_segments(int64_t T, int64_t N, int64_t HV, int64_t ctas_per_head, int sms,
                          int64_t cp_segment_chunks) {
  if (cp_segment_chunks == 0 || N == 0 || T == 0) return single_segment(T, N);
  if (cp_segment_chunks > 0) return segments_of(T, N, cp_segment_chunks);

  // Time model in chunk times, assuming N equally long sequences (the host does not read the
  // lengths): a pass over segments of L chunks with C CTAs takes L * ceil(C / sms).
  const auto waves = [sms](double ctas) { return std::ceil(ctas / sms); };
  const int64_t chunks = std::max<int64_t>(ceil_div(T, kChunkTokens) / std::max<int64_t>(N, 1), 1);
  const int64_t heads = HV * ctas_per_head;
  const double one_segment = double(chunks) * waves(double(N * heads));
  double best = one_segment * kMinGain;
  int64_t best_chunks = 0;
  for (int64_t L = kMinSegChunks; L < chunks; L *= 2) {
    if (2 * (ceil_div(T, L * kChunkTokens) + N) > kMaxGridRows) continue;  // the warm-up pass's rows
    const int64_t segs = ceil_div(chunks, L);
    const double ctas = double(N * segs * heads);
    const double cost =
        double(L) * (waves(ctas) + waves(2 * kFallbackShare * ctas)) + double(segs) * kCorrectionStep;
    if (cost < best) {
      best = cost;
      best_chunks = L;
    }
  }
  return best_chunks > 0 ? segments_of(T, N, best_chunks) : single_segment(T, N);
}

}  // namespace flashqla
