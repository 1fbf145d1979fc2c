#include "segment_plan.h"

#include <algorithm>

namespace flashqla {

namespace {
constexpr int64_t kChunkTokens = 64;
constexpr int64_t kMinSegChunks = 4;
// Costs relative to one chunk of the sequential kernels, measured on an H200 (benchmarks/results/
// H200_profile.md). The warm-up pass runs the few chunks a decaying head needs (the benchmark's gate,
// logsigmoid(randn) / 16, reaches the threshold in 4; strong gates in 1): modeled as kWarmupChunks
// per segment. A head without decay takes the exact fallback instead, which runs its whole segment
// twice over in parallel CTAs; the model does not assume it (with every head so, a chosen CP can take
// up to about 1.5 times the single-segment time). One correction step (a 128 x 128 transition matrix
// read from memory and applied) costs about 8 chunks.
constexpr int64_t kWarmupChunks = 8;
constexpr double kCorrectionStep = 8.0;
// CP must beat the single-segment estimate by this factor to be chosen
constexpr double kMinGain = 0.8;

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
  const int64_t chunks = std::max<int64_t>(ceil_div(T, kChunkTokens) / std::max<int64_t>(N, 1), 1);
  const int64_t heads = HV * ctas_per_head;
  const double one_segment = double(chunks) * double(ceil_div(N * heads, sms));
  double best = one_segment * kMinGain;
  int64_t best_chunks = 0;
  for (int64_t L = kMinSegChunks; L < chunks; L *= 2) {
    if (2 * (ceil_div(T, L * kChunkTokens) + N) > kMaxGridRows) continue;  // the warm-up pass's rows
    const int64_t segs = ceil_div(chunks, L);
    const double waves = double(ceil_div(N * segs * heads, sms));
    const double cost =
        double(L + std::min(L, kWarmupChunks)) * waves + double(segs) * kCorrectionStep;
    if (cost < best) {
      best = cost;
      best_chunks = L;
    }
  }
  return best_chunks > 0 ? segments_of(T, N, best_chunks) : single_segment(T, N);
}

}  // namespace flashqla
