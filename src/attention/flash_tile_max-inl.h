// File: flash_tile_max-inl.h
// Highway code shared by the online-softmax updates of the decode kernel
// (flash_decode_simd.cc) and the prefill groups (flash_prefill_tile-inl.h), included once per
// target after hwy/foreach_target.h: a row's largest score over one tile, with the NaN / +inf
// rule of DESIGN.md's attention semantics applied on the way.

// Per-target include guard (Highway's convention for -inl.h files).
#if defined(KVCHECK_SRC_ATTENTION_FLASH_TILE_MAX_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVCHECK_SRC_ATTENTION_FLASH_TILE_MAX_INL_H_
#undef KVCHECK_SRC_ATTENTION_FLASH_TILE_MAX_INL_H_
#else
#define KVCHECK_SRC_ATTENTION_FLASH_TILE_MAX_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "hwy/highway.h"
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

}  // namespace HWY_NAMESPACE
}  // namespace kvcheck::flash_internal
HWY_AFTER_NAMESPACE();

#endif  // KVCHECK_SRC_ATTENTION_FLASH_TILE_MAX_INL_H_
