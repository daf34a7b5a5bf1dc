#include "src/attention/transpose_keys.h"

#include <cstdint>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/attention/transpose_keys.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kvcheck::flash_internal {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Why vectors: element by element, a run of 16 keys over D = 64 is 1024 scalar loads and
// stores, and the transpose took 2.5% of a 512 x 512 causal prefill on one Zen 4 core
// (perf cpu-clock); a 16 x 16 square in vectors is 16 loads, 80 shuffles and 16 stores.

#if HWY_TARGET != HWY_SCALAR
// Four rows' elements [d0, d0 + N) as four vectors: c[j]'s 128-bit block b holds the rows'
// element d0 + 4b + j, rows in order (two rounds of interleaving within blocks: 32-bit, then
// 64-bit halves).
template <class DF>
HWY_INLINE void FourRowsInBlocks(DF df, const float* const* rows, int64_t d0, hn::Vec<DF>* c) {
  const hn::Repartition<uint64_t, DF> du64;
  const auto r0 = hn::LoadU(df, rows[0] + d0);
  const auto r1 = hn::LoadU(df, rows[1] + d0);
  const auto r2 = hn::LoadU(df, rows[2] + d0);
  const auto r3 = hn::LoadU(df, rows[3] + d0);
  // Per block: r0[0] r1[0] r0[1] r1[1], and r0[2] r1[2] r0[3] r1[3].
  const auto lo01 = hn::BitCast(du64, hn::InterleaveLower(df, r0, r1));
  const auto hi01 = hn::BitCast(du64, hn::InterleaveUpper(df, r0, r1));
  const auto lo23 = hn::BitCast(du64, hn::InterleaveLower(df, r2, r3));
  const auto hi23 = hn::BitCast(du64, hn::InterleaveUpper(df, r2, r3));
  c[0] = hn::BitCast(df, hn::InterleaveLower(du64, lo01, lo23));
  c[1] = hn::BitCast(df, hn::InterleaveUpper(du64, lo01, lo23));
  c[2] = hn::BitCast(df, hn::InterleaveLower(du64, hi01, hi23));
  c[3] = hn::BitCast(df, hn::InterleaveUpper(du64, hi01, hi23));
}

// The square of rows [0, N) and elements [d0, d0 + N), N the lane count (4, 8 or 16): out's
// row d0 + i, elements [0, N), gets element d0 + i of every row.
template <class DF>
HWY_INLINE void TransposeSquare(DF df, const float* const* rows, int64_t d0, float* out,
                                int64_t out_stride) {
  using V = hn::Vec<DF>;
  constexpr int64_t kN = static_cast<int64_t>(hn::MaxLanes(DF()));
  V g[kN / 4][4];  // g[k]: rows [4k, 4k + 4) (FourRowsInBlocks)
  for (int64_t k = 0; k < kN / 4; ++k) FourRowsInBlocks(df, rows + 4 * k, d0, g[k]);
  float* column = out + d0 * out_stride;  // K^T's row d0
  for (int j = 0; j < 4; ++j) {
    if constexpr (kN == 4) {
      hn::StoreU(g[0][j], df, column + j * out_stride);
    } else if constexpr (kN == 8) {  // two blocks: element j from block 0, 4 + j from block 1
      hn::StoreU(hn::ConcatLowerLower(df, g[1][j], g[0][j]), df, column + j * out_stride);
      hn::StoreU(hn::ConcatUpperUpper(df, g[1][j], g[0][j]), df, column + (4 + j) * out_stride);
    } else {  // four blocks: a 4 x 4 transpose of blocks across the four groups
      const V a = g[0][j], b = g[1][j], c = g[2][j], d = g[3][j];
      // Blocks named group:block. ab_even = a:0 b:0 a:2 b:2, ab_odd = a:1 b:1 a:3 b:3.
      const V ab_even = hn::OddEvenBlocks(hn::SwapAdjacentBlocks(b), a);
      const V ab_odd = hn::OddEvenBlocks(b, hn::SwapAdjacentBlocks(a));
      const V cd_even = hn::OddEvenBlocks(hn::SwapAdjacentBlocks(d), c);
      const V cd_odd = hn::OddEvenBlocks(d, hn::SwapAdjacentBlocks(c));
      hn::StoreU(hn::ConcatLowerLower(df, cd_even, ab_even), df, column + j * out_stride);
      hn::StoreU(hn::ConcatLowerLower(df, cd_odd, ab_odd), df, column + (4 + j) * out_stride);
      hn::StoreU(hn::ConcatUpperUpper(df, cd_even, ab_even), df, column + (8 + j) * out_stride);
      hn::StoreU(hn::ConcatUpperUpper(df, cd_odd, ab_odd), df, column + (12 + j) * out_stride);
    }
  }
}
#endif  // HWY_TARGET != HWY_SCALAR

void TransposeKeysImpl(const float* const* rows, int64_t count, int64_t head_dim, float* out,
                       int64_t out_stride) {
  int64_t t0 = 0;
#if HWY_TARGET != HWY_SCALAR
  using DF = hn::ScalableTag<float>;
  constexpr int64_t kN = static_cast<int64_t>(hn::MaxLanes(DF()));
  if constexpr (kN == 4 || kN == 8 || kN == 16) {
    const DF df;
    const int64_t d_end = head_dim / kN * kN;
    for (; t0 + kN <= count; t0 += kN) {
      for (int64_t d = 0; d < d_end; d += kN) TransposeSquare(df, rows + t0, d, out + t0, out_stride);
      for (int64_t d = d_end; d < head_dim; ++d) {
        for (int64_t t = t0; t < t0 + kN; ++t) out[d * out_stride + t] = rows[t][d];
      }
    }
  }
#endif
  // Keys short of a square (and every key on a target without one).
  for (int64_t d = 0; d < head_dim; ++d) {
    for (int64_t t = t0; t < count; ++t) out[d * out_stride + t] = rows[t][d];
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kvcheck::flash_internal
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kvcheck::flash_internal {

HWY_EXPORT(TransposeKeysImpl);

void TransposeKeys(const float* const* rows, int64_t count, int64_t head_dim, float* out,
                   int64_t out_stride) {
  HWY_DYNAMIC_DISPATCH(TransposeKeysImpl)(rows, count, head_dim, out, out_stride);
}

void TransposeKeysScalar(const float* const* rows, int64_t count, int64_t head_dim, float* out,
                         int64_t out_stride) {
  for (int64_t d = 0; d < head_dim; ++d) {
    for (int64_t t = 0; t < count; ++t) out[d * out_stride + t] = rows[t][d];
  }
}

}  // namespace kvcheck::flash_internal
#endif  // HWY_ONCE
