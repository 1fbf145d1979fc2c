#include "segment_plan.h"

#include <algorithm>
#include <cmath>

namespace flashqla {

namespace {
constexpr int64_t kChunkTokens = 64;
constexpr int64_t kMinSegChunks = 4;
// Costs in chunk times of the sequential kernels (one CTA per SM), fitted to forced segment lengths and V widths on an
// H200 (benchmarks/cp_sweep.py, CUDA-graph timing; 119 shapes: 9 head configurations, one to eight sequences, 2048 to
// 32768 tokens; benchmarks/cp_model_fit.py; benchmarks/results/H200_cp_sweep.md, "Refit"). The warm-up pass is as long
// as a main pass for the heads without decay, whose exact fallback runs the whole segment in two CTAs (end state and
// transition matrix), and a few chunks for the others: modeled as a share of the heads without decay (a quarter in
// the benchmark's inputs, anchors.md), so 2 * share CTAs per segment and head running L chunks. One correction step (a
// 128 x 128 transition read and applied: one dependent step of the walk, ~4.2 us) costs about five chunk times of a CTA
// among many (the fit's plateau is 4-6; 1.5 before, fitted when the chunk was slower, chose segments too short). The
// backward's state-gradient pass runs beside the forward's recompute on a side stream, which takes SMs its segments
// would use: its warm-up share is fitted at a half. Regret (the chosen plan's time over the fastest forced one,
// geometric mean over the 119 shapes): forward 3.4% -> 1.3%, backward 3.2% -> 0.3%. With the forward's chunk states
// kept (no recompute beside it) the pass has the SMs to itself and its share fits the forward's quarter (36 shapes,
// 6 head configurations, cp_sweep.py --keep; H200_cp_sweep.md, "Kept states"): regret 1.2% -> 0.2%, up to 1.11x at
// (8, 24) 1x16384.
constexpr SegmentModel kModel{0.25, 5.0};
constexpr double kBwdDhFallbackShare = 0.5;
// the longest of N sequences, assumed: this many times the mean length (at most T). Fitted with the constants above
// (1.25; 1, the equal lengths assumed before, left the backward 27-37% slower than forced CP at (16, 16) and (4, 16)
// 28672+4096)
constexpr double kLongestShare = 1.25;
// CP must beat the single-segment estimate by this factor to be chosen
constexpr double kMinGain = 0.9;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Time model in chunk times. The host does not read the lengths (no device-to-host copy): it assumes N sequences of
// about T / N tokens, the longest kLongestShare times that (at most T), unless the caller passed the longest
// (max_seqlen). A pass over segments of L chunks with C CTAs takes L * ceil(C / sms); the correction walk of the
// longest sequence runs ceil(longest / L) steps. One segment per sequence: with the longest known, the passes' waves of
// mean-length sequences or the longest sequence, whichever is longer (the CTAs of shorter sequences end early and
// free their SMs); without it, the longest times the waves.
struct CostModel {
  int64_t T, N, heads;  // heads: CTAs per segment (v-heads times V slices)
  int64_t max_seqlen;   // 0: unknown
  int sms;
  SegmentModel k;
  int64_t total() const { return std::max<int64_t>(ceil_div(T, kChunkTokens), 1); }
  int64_t chunks() const { return std::max<int64_t>(total() / std::max<int64_t>(N, 1), 1); }
  int64_t longest() const {
    if (max_seqlen > 0) return std::min(total(), ceil_div(max_seqlen, kChunkTokens));
    return std::min(total(), std::max(chunks(), static_cast<int64_t>(std::floor(kLongestShare * double(chunks())))));
  }
  double waves(double ctas) const { return std::ceil(ctas / sms); }
  double one_segment() const {
    const double w = waves(double(N * heads));
    return max_seqlen > 0 ? std::max(double(longest()), double(chunks()) * w) : double(longest()) * w;
  }
  // segments of L chunks: the warm-up pass, the main pass and the corrections
  double segmented(int64_t L) const {
    const double ctas = double(N * ceil_div(chunks(), L) * heads);
    return double(L) * (waves(ctas) + waves(2 * k.fallback_share * ctas)) +
           double(ceil_div(longest(), L)) * k.correction_step;
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

SegmentPlan plan_bwd_dh(int64_t T, int64_t N, int64_t HV, int64_t max_seqlen, int64_t ctas_per_head, int sms,
                        int64_t cp_segment_chunks, bool states_kept) {
  return plan_segments(T, N, HV, max_seqlen, ctas_per_head, sms, cp_segment_chunks,
                       SegmentModel{states_kept ? kModel.fallback_share : kBwdDhFallbackShare, kModel.correction_step});
}

SegmentPlan plan_segments(int64_t T, int64_t N, int64_t HV, int64_t max_seqlen, int64_t ctas_per_head, int sms,
                          int64_t cp_segment_chunks, const SegmentModel& model) {
  const CostModel m{T, N, HV * ctas_per_head, max_seqlen, sms, model};
  if (cp_segment_chunks == 0 || N == 0 || T == 0) return single_segment(T, N, m);
  if (cp_segment_chunks > 0) return segments_of(T, N, cp_segment_chunks, m);

  double best = m.one_segment() * kMinGain;
  int64_t best_chunks = 0;
  for (int64_t L = kMinSegChunks; L < m.longest(); L *= 2) {
    if (2 * (ceil_div(T, L * kChunkTokens) + N) > kMaxGridRows) continue;  // the warm-up pass's rows
    const double cost = m.segmented(L);
    if (cost < best) {
      best = cost;
      best_chunks = L;
    }
  }
  return best_chunks > 0 ? segments_of(T, N, best_chunks, m) : single_segment(T, N, m);
}

SegmentPlan plan_bwd_fused(int64_t T, int64_t N, int64_t HV, int64_t max_seqlen, int sms, int64_t cp_segment_chunks,
                           bool states_kept) {
  const SegmentModel model{states_kept ? kModel.fallback_share : kBwdDhFallbackShare, kModel.correction_step};
  const CostModel main{T, N, HV, max_seqlen, sms, model};  // one CTA per segment and v-head
  // segments of L chunks: the fused main pass, the warm-up pass (two V slices per head; the fallback heads' two
  // rows), the corrections
  const auto segmented = [&](int64_t L) {
    const double rows = double(N * ceil_div(main.chunks(), L) * HV);
    return kFusedBwdChunkTime * double(L) * main.waves(rows) +
           double(L) * main.waves(2 * model.fallback_share * 2 * rows) +
           double(ceil_div(main.longest(), L)) * model.correction_step;
  };
  if (cp_segment_chunks == 0 || N == 0 || T == 0) {
    SegmentPlan p = single_segment(T, N, main);
    p.cost *= kFusedBwdChunkTime;
    return p;
  }
  if (cp_segment_chunks > 0) {
    SegmentPlan p = segments_of(T, N, cp_segment_chunks, main);
    p.cost = segmented(cp_segment_chunks);
    return p;
  }
  double best = kFusedBwdChunkTime * main.one_segment() * kMinGain;
  int64_t best_chunks = 0;
  for (int64_t L = kMinSegChunks; L < main.longest(); L *= 2) {
    if (2 * (ceil_div(T, L * kChunkTokens) + N) > kMaxGridRows) continue;  // the warm-up pass's rows
    const double cost = segmented(L);
    if (cost < best) {
      best = cost;
      best_chunks = L;
    }
  }
  if (best_chunks == 0) {
    SegmentPlan p = single_segment(T, N, main);
    p.cost *= kFusedBwdChunkTime;
    return p;
  }
  SegmentPlan p = segments_of(T, N, best_chunks, main);
  p.cost = best;
  return p;
}

FwdPlan plan_fwd(int64_t T, int64_t N, int64_t HV, int64_t max_seqlen, int sms, int64_t cp_segment_chunks,
                 bool allow_bv128, int forced_block_v, bool allow_bv32) {
  if (forced_block_v == 32) return FwdPlan{32, plan_segments(T, N, HV, max_seqlen, 4, sms, cp_segment_chunks, kModel)};
  const FwdPlan narrow{64, plan_segments(T, N, HV, max_seqlen, 2, sms, cp_segment_chunks, kModel)};
  if (forced_block_v == 64) return narrow;
  // the 32-wide slice where the 64-wide plan leaves half the SMs idle: one segment per sequence, and four CTAs per
  // head and sequence still one wave
  const bool idle_half = !narrow.sp.cp && N * HV * 4 <= sms;
  if (forced_block_v == 0 && allow_bv32 && idle_half) {
    return FwdPlan{32, plan_segments(T, N, HV, max_seqlen, 4, sms, 0, kModel)};
  }
  if (forced_block_v == 0 && !allow_bv128) return narrow;
  const FwdPlan wide{128, plan_segments(T, N, HV, max_seqlen, 1, sms, cp_segment_chunks, kModel)};
  if (forced_block_v == 128) return wide;
  return wide.sp.cost * kChunkTimeBv128 < narrow.sp.cost * kMinGain ? wide : narrow;  // the same margin as CP's
}

}  // namespace flashqla
