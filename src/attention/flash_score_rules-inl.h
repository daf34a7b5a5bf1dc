// File: flash_score_rules-inl.h
// What the contract adds to a score after the scaled dot product (key_rules.h's FinishScore:
// the softcap, then ALiBi, then the mask), in vectors over a tile of scores, for the dense
// decode kernel (flash_decode_simd.cc) and the prefill groups (flash_prefill_tile-inl.h);
// Highway code, included once per target after hwy/foreach_target.h.
//
// Each rule takes the first `count` scores of each of kRows rows (row r at scores + r *
// kStride, kStride a whole number of vectors) and leaves the rest as they are: past a short
// tile they are -inf or are set to it later, and a rule must not turn them into something
// else (tanh(-inf) is -1, an overflowing bias is NaN).

// Per-target include guard (Highway's convention for -inl.h files).
#if defined(KVCHECK_SRC_ATTENTION_FLASH_SCORE_RULES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVCHECK_SRC_ATTENTION_FLASH_SCORE_RULES_INL_H_
#undef KVCHECK_SRC_ATTENTION_FLASH_SCORE_RULES_INL_H_
#else
#define KVCHECK_SRC_ATTENTION_FLASH_SCORE_RULES_INL_H_
#endif

#include <algorithm>
#include <cstdint>
#include <limits>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "src/attention/flash_problem.h"

HWY_BEFORE_NAMESPACE();
namespace kvcheck::flash_internal {
namespace HWY_NAMESPACE {
namespace score_rules {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// count rounded up to whole vectors (<= kStride, a multiple of the lanes, for count <= kStride).
HWY_INLINE int64_t WholeVectors(DF df, int64_t count) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  return (count + N - 1) / N * N;
}

// `rule(lanes)` on the first `count` scores of each row, vector by vector; lanes past
// `count` keep their score.
template <int kRows, int64_t kStride, typename Rule>
HWY_INLINE void ForEachScoreVector(DF df, int64_t count, float* scores, Rule rule) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  for (int r = 0; r < kRows; ++r) {
    float* row = scores + r * kStride;
    for (int64_t t = 0; t < count; t += N) {
      const VF s = hn::Load(df, row + t);
      const VF ruled = rule(r, t, s);
      hn::Store(hn::IfThenElse(hn::FirstN(df, static_cast<size_t>(count - t)), ruled, s), df,
                row + t);
    }
  }
}

// The logit softcap s -> c tanh(s / c), as c tanh(s * (1/c)). Highway's Tanh is within 4
// ulps, the bound's tanh_ulps (reference/ERROR_BOUND.md), and maps NaN to NaN and +-inf to
// +-1 as std::tanh does.
template <int kRows, int64_t kStride>
HWY_INLINE void SoftcapScores(DF df, const FlashProblem& p, int64_t count, float* scores) {
  const VF cap = hn::Set(df, p.softcap), inverse = hn::Set(df, p.inverse_softcap);
  ForEachScoreVector<kRows, kStride>(df, count, scores, [&](int, int64_t, VF s) HWY_ATTR {
    return hn::Mul(cap, hn::Tanh(df, hn::Mul(s, inverse)));
  });
}

// The ALiBi bias s += slope_h (kpos - qpos) for rows [r0, r0 + kRows) of the block and keys
// [first, first + count); rows whose head has no slope are left alone. kpos - qpos is taken
// in int64_t and rounded to float per key, as FinishScore does.
template <int kRows, int64_t kStride>
HWY_INLINE void AlibiScores(DF df, const FlashProblem& p, const RowBlock& block, int r0,
                            int64_t first, int64_t count, float* scores) {
  alignas(64) float distance[kStride];
  for (int r = 0; r < kRows; ++r) {
    const float slope = p.Slope(block.head[r0 + r]);
    if (slope == 0.0f) continue;
    const int64_t qpos = p.QueryPosition(block.batch, block.query[r0 + r]);
    // Key j at position j (no table): the distances first - qpos + t are whole numbers that
    // floats hold exactly below 2^24, so a vector of them is the rounded int64_t difference.
    const int64_t base = first - qpos;
    const bool exact_iota = p.kv_positions == nullptr && base > -(int64_t{1} << 24) &&
                            base + kStride < (int64_t{1} << 24);
    if (!exact_iota) {
      for (int64_t t = 0; t < count; ++t) {
        distance[t] = static_cast<float>(p.KeyPosition(block.batch, first + t) - qpos);
      }
      std::fill(distance + count, distance + WholeVectors(df, count), 0.0f);  // the last one's
    }
    const VF slope_v = hn::Set(df, slope);
    ForEachScoreVector<1, kStride>(df, count, scores + r * kStride,
                                   [&](int, int64_t t, VF s) HWY_ATTR {
      const VF d = exact_iota ? hn::Iota(df, static_cast<float>(base + t))
                              : hn::Load(df, distance + t);
      return hn::MulAdd(slope_v, d, s);
    });
  }
}

// The additive mask s += mask(b, h, i, first + t) for rows [r0, r0 + kRows) of the block.
// A -inf value makes the score -inf whatever the dot product was (NaN or +inf from a removed
// key's K plus -inf would be NaN and poison the row); the caller keeps such keys out of its
// weighted sum and its count of allowed keys. REQUIRES: p.mask with mask_stride[3] == 1.
template <int kRows, int64_t kStride>
HWY_INLINE void MaskScores(DF df, const FlashProblem& p, const RowBlock& block, int r0,
                           int64_t first, int64_t count, float* scores) {
  alignas(64) float tail[kStride];
  for (int r = 0; r < kRows; ++r) {
    const float* bias = p.MaskRow(block.batch, block.head[r0 + r], block.query[r0 + r]) + first;
    if (count != WholeVectors(df, count)) {  // the row may end within the last vector
      std::copy(bias, bias + count, tail);
      std::fill(tail + count, tail + WholeVectors(df, count), 0.0f);
      bias = tail;
    }
    const VF minus_inf = hn::Set(df, -std::numeric_limits<float>::infinity());
    ForEachScoreVector<1, kStride>(df, count, scores + r * kStride,
                                   [&](int, int64_t t, VF s) HWY_ATTR {
      const VF m = hn::LoadU(df, bias + t);
      return hn::IfThenElse(hn::Eq(m, minus_inf), m, hn::Add(s, m));
    });
  }
}

// Every rule the problem enables, in FinishScore's order.
template <int kRows, int64_t kStride>
HWY_INLINE void ApplyScoreRules(DF df, const FlashProblem& p, const RowBlock& block, int r0,
                                int64_t first, int64_t count, float* scores) {
  if (p.softcap > 0.0f) SoftcapScores<kRows, kStride>(df, p, count, scores);
  if (p.alibi_slopes != nullptr) {
    AlibiScores<kRows, kStride>(df, p, block, r0, first, count, scores);
  }
  if (p.mask != nullptr) MaskScores<kRows, kStride>(df, p, block, r0, first, count, scores);
}

}  // namespace score_rules
using score_rules::ApplyScoreRules;
using score_rules::WholeVectors;
}  // namespace HWY_NAMESPACE
}  // namespace kvcheck::flash_internal
HWY_AFTER_NAMESPACE();

#endif  // KVCHECK_SRC_ATTENTION_FLASH_SCORE_RULES_INL_H_
