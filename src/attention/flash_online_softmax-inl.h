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

// The largest of row[0, width) (width a multiple of the lane count). A NaN or +inf score
// makes the row's output NaN: state.nan is set, the row's NaN scores become -inf (they weigh
// 0 from here on, so the state stays free of NaN arithmetic), and the maximum is taken again
// without them. One vector pass when no score is bad (Max may keep or drop a NaN, so the
// flag is kept separately).
template <class DF>
HWY_INLINE float TileMaxMarkingNan(DF df, RowState& state, float* row, int64_t width) {
  const float minus_inf = -std::numeric_limits<float>::infinity();
  const auto inf_v = hn::Set(df, std::numeric_limits<float>::infinity());
  auto max_v = hn::Set(df, minus_inf);
  auto bad = hn::Lt(max_v, max_v);  // lanes that saw NaN or +inf; all false
  for (int64_t t = 0; t < width; t += static_cast<int64_t>(hn::Lanes(df))) {
    const auto s = hn::LoadU(df, row + t);
    max_v = hn::Max(max_v, s);
    bad = hn::Or(bad, hn::Not(hn::Lt(s, inf_v)));
  }
  float tile_max = hn::GetLane(hn::MaxOfLanes(df, max_v));
  if (HWY_UNLIKELY(!hn::AllFalse(df, bad))) {
    state.nan = true;
    tile_max = minus_inf;
    for (int64_t t = 0; t < width; ++t) {
      if (std::isnan(row[t])) row[t] = minus_inf;
      tile_max = std::max(tile_max, row[t]);  // no NaN left: std::max is fmax
    }
  }
  return tile_max;
}

// The online-softmax update of rows [0, kRows), row r's scores at scores + r * row_stride,
// over their first `width` keys (a multiple of the lane count; scores a row may not see are
// already -inf): each state is rescaled to its new running max and the scores are replaced
// by their weights p_t = exp(s_t - m) (0 for -inf). The rows' exp calls are interleaved:
// independent chains for the pipelines, and each constant loaded once for all.
template <int kRows, class DF>
HWY_INLINE void UpdateRows(DF df, RowState* states, float* scores, int64_t row_stride,
                           int64_t width, int64_t loop_dim) {
  using VF = hn::Vec<DF>;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  VF m_v[kRows], sum_v[kRows];
  for (int r = 0; r < kRows; ++r) {
    RowState& state = states[r];
    const float tile_max = TileMaxMarkingNan(df, state, scores + r * row_stride, width);
    if (tile_max > state.max) {
      // m_old -> m: acc and l scale by exp(m_old - m) (0 when m_old is -inf), with the
      // vector exp of the weights (no libm call per row and tile).
      const VF alpha_v = ExpOfNonPositive(df, hn::Set(df, state.max - tile_max));
      const float alpha = hn::GetLane(alpha_v);
      for (int64_t d = 0; d < loop_dim; d += N) {
        hn::StoreU(hn::Mul(hn::LoadU(df, state.acc + d), alpha_v), df, state.acc + d);
      }
      state.sum *= alpha;
      state.max = tile_max;
    }
    m_v[r] = hn::Set(df, state.max);
    sum_v[r] = hn::Zero(df);
  }
  // p_t = exp(s_t - m) (flash_exp-inl.h: s_t - m <= 0); with m = -inf (every score so far
  // -inf) the argument is NaN and 0 is the weight.
  for (int64_t t = 0; t < width; t += N) {
    HWY_UNROLL(6)
    for (int r = 0; r < kRows; ++r) {
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
