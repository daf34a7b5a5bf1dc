// File: flash_online_softmax-inl.h
// The online-softmax update of a group of rows over one tile of scores, shared by the decode
// kernel (flash_decode_simd.cc) and the prefill groups (flash_prefill_tile-inl.h); Highway
// code, included once per target after hwy/foreach_target.h.

// Per-target include guard (Highway's convention for -inl.h files).
#if defined(KVCHECK_SRC_ATTENTION_FLASH_ONLINE_SOFTMAX_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVCHECK_SRC_ATTENTION_FLASH_ONLINE_SOFTMAX_INL_H_
#undef KVCHECK_SRC_ATTENTION_FLASH_ONLINE_SOFTMAX_INL_H_
#else
#define KVCHECK_SRC_ATTENTION_FLASH_ONLINE_SOFTMAX_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "hwy/highway.h"
#include "src/attention/flash_exp-inl.h"
#include "src/attention/flash_problem.h"

HWY_BEFORE_NAMESPACE();
namespace kvcheck::flash_internal {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Row's tile max when some row of the group saw a NaN or +inf score (rare: off the hot path).
// If this row did, its output becomes NaN (state.nan), its NaN scores become -inf (they weigh
// 0 from here on, so the state stays free of NaN arithmetic) and its max is taken again
// without them; otherwise `tile_max` stands.
HWY_NOINLINE inline float RowMaxMarkingNan(RowState& state, float* row, int64_t width,
                                           float tile_max) {
  const float inf = std::numeric_limits<float>::infinity();
  bool bad = false;
  for (int64_t t = 0; t < width; ++t) bad = bad || !(row[t] < inf);
  if (!bad) return tile_max;
  state.nan = true;
  tile_max = -inf;
  for (int64_t t = 0; t < width; ++t) {
    if (std::isnan(row[t])) row[t] = -inf;
    tile_max = std::max(tile_max, row[t]);  // no NaN left: std::max is fmax
  }
  return tile_max;
}

// The online-softmax update of rows [0, kRows), row r's scores at scores + r * row_stride,
// over their first `width` keys (a multiple of the lane count; scores a row may not see are
// already -inf): each state is rescaled to its new running max and the scores are replaced
// by their weights p_t = exp(s_t - m) (0 for -inf). The rows' passes are interleaved
// (independent chains for the pipelines, each constant loaded once for all), and the rescale
// has no branch per row: whether a row's max grows is a coin toss in a short prefill row,
// and the mispredicted branches and each row's own exp chain showed in its profile.
template <int kRows, class DF>
HWY_INLINE void UpdateRows(DF df, RowState* states, float* scores, int64_t row_stride,
                           int64_t width, int64_t loop_dim) {
  using VF = hn::Vec<DF>;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const float minus_inf = -std::numeric_limits<float>::infinity();
  // 1. Each row's tile max, and whether it saw NaN or +inf (Max may keep or drop a NaN, so
  //    that is flagged separately).
  const VF inf_v = hn::Set(df, std::numeric_limits<float>::infinity());
  VF max_v[kRows];
  auto bad = hn::Lt(inf_v, inf_v);  // lanes that saw NaN or +inf in any row; all false
  for (int r = 0; r < kRows; ++r) max_v[r] = hn::Set(df, minus_inf);
  for (int64_t t = 0; t < width; t += N) {
    HWY_UNROLL(6)
    for (int r = 0; r < kRows; ++r) {
      const VF s = hn::LoadU(df, scores + r * row_stride + t);
      max_v[r] = hn::Max(max_v[r], s);
      bad = hn::Or(bad, hn::Not(hn::Lt(s, inf_v)));
    }
  }
  // 2. The new running maxima m and the factors exp(m_old - m) that rescale acc and l, one
  //    vector exp for all rows: exactly 1 where m did not grow (exp(0) is 1), 0 where m_old
  //    is -inf (exp(-inf), or exp(NaN) when m is still -inf too).
  constexpr size_t kMaxN = hn::MaxLanes(DF());
  constexpr size_t kPadded = (kRows + kMaxN - 1) / kMaxN * kMaxN;
  alignas(64) float gap[kPadded] = {};
  alignas(64) float alpha[kPadded];
  const bool any_bad = !hn::AllFalse(df, bad);
  bool grows = false;
  for (int r = 0; r < kRows; ++r) {
    RowState& state = states[r];
    float tile_max = hn::GetLane(hn::MaxOfLanes(df, max_v[r]));
    if (HWY_UNLIKELY(any_bad)) {
      tile_max = RowMaxMarkingNan(state, scores + r * row_stride, width, tile_max);
    }
    const float m = std::max(state.max, tile_max);
    gap[r] = state.max - m;
    grows = grows || m > state.max;
    state.max = m;
  }
  if (grows) {
    for (size_t i = 0; i < kPadded; i += static_cast<size_t>(N)) {
      hn::Store(ExpOfNonPositive(df, hn::Load(df, gap + i)), df, alpha + i);
    }
    for (int r = 0; r < kRows; ++r) {
      RowState& state = states[r];
      const VF alpha_v = hn::Set(df, alpha[r]);
      for (int64_t d = 0; d < loop_dim; d += N) {
        hn::StoreU(hn::Mul(hn::LoadU(df, state.acc + d), alpha_v), df, state.acc + d);
      }
      state.sum *= alpha[r];
    }
  }
  VF m_v[kRows], sum_v[kRows];
  for (int r = 0; r < kRows; ++r) {
    m_v[r] = hn::Set(df, states[r].max);
    sum_v[r] = hn::Zero(df);
  }
  // 3. p_t = exp(s_t - m) (flash_exp-inl.h: s_t - m <= 0); with m = -inf (every score so far
  //    -inf) the argument is NaN and 0 is the weight.
  //    Row by row: with the rows interleaved in one loop, their maxima, sums and the exp's
  //    constants outnumbered AVX2's 16 registers, and GCC kept the sums on the stack, each
  //    add waiting on a store and a reload. Each row's sum takes the keys in the same order
  //    either way (the same bits). Zen 2 VM, alternating pairs (ab_pair.sh, four each, one
  //    core, 2026-12-04): one cached (1, 4096) decode 0.97x the time, 512 x 512 causal
  //    prefill 0.96x (faster in 4 of 4 each), 30 layers from memory 0.99x. Not yet measured
  //    on an AVX-512 machine.
  for (int r = 0; r < kRows; ++r) {
    for (int64_t t = 0; t < width; t += N) {
      float* at = scores + r * row_stride + t;
      const VF p = ExpOfNonPositive(df, hn::Sub(hn::LoadU(df, at), m_v[r]));
      hn::StoreU(p, df, at);
      sum_v[r] = hn::Add(sum_v[r], p);
    }
  }
  for (int r = 0; r < kRows; ++r) states[r].sum += hn::GetLane(hn::SumOfLanes(df, sum_v[r]));
}

}  // namespace HWY_NAMESPACE
}  // namespace kvcheck::flash_internal
HWY_AFTER_NAMESPACE();

#endif  // KVCHECK_SRC_ATTENTION_FLASH_ONLINE_SOFTMAX_INL_H_
