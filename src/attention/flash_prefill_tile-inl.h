// File: flash_prefill_tile-inl.h
// Highway code of the general tile kernel's prefill path (flash_block_simd.cc), included once
// per target after hwy/foreach_target.h. It takes a block when K is transposed once per
// (b, kv_head) by the driver (prefill) and the keys a row's causal and window rules let it
// see are one range (default key positions); a softcap, ALiBi and a mask (unit stride along
// the keys) are applied in vectors: PrefillTiles
// walks the block's keys kKeys (four tiles) at a time and splits the rows into groups of up
// to six (GQA prefill: two query positions of a group of three heads, each K^T and V load
// serving all six).
//
// Per group and kKeys keys (GroupTile):
//   1. scores s[r][t] = <q_r * scale, k_t>: kRows rows x 2 vectors of keys (12 accumulators
//      for six rows on AVX2's 16 registers) through all of D, each K^T vector load shared by
//      the rows and each broadcast q element by two vectors of keys; no horizontal sums;
//      keys past every row's range (a short last tile, causal prefill's diagonal) are neither
//      scored nor weighed, in whole vectors; then the softcap, ALiBi and mask
//      (flash_score_rules-inl.h);
//   2. keys outside row r's range [begin_r, end_r) of the tile become -inf (diagonal tiles of
//      causal prefill, and the keys past a short last tile), then the online-softmax update
//      of each row, the rows' exp calls interleaved: m = max(m_old, max_t s_t); acc and l
//      scale by exp(m_old - m) only when m grows; p_t = exp(s_t - m); l += sum_t p_t;
//   3. acc += sum_t p_t v_t over the keys every row of the group sees, [max_r begin_r,
//      min_r end_r), with kRows x kDV vectors of D in registers across the keys (each V load
//      shared by the rows); the few keys only some rows see (the diagonal) key by key for
//      those rows; where the mask removes keys (-inf) of the tile, the common range shrinks
//      to keys no row's mask removes, and the key-by-key passes skip removed ones. A key a
//      row may not see is never multiplied in, not even by 0 (0 * NaN would leak a masked
//      NaN value), nor counted among its allowed keys.
// NaN is never hidden: the softmax's exp (flash_exp-inl.h) maps NaN to 0, so NaN and +inf
// scores are caught before it and mark the row (FinalizeRow writes NaN), as in the rest of
// the kernel.

// Per-target include guard (Highway's convention for -inl.h files).
#if defined(KVCHECK_SRC_ATTENTION_FLASH_PREFILL_TILE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVCHECK_SRC_ATTENTION_FLASH_PREFILL_TILE_INL_H_
#undef KVCHECK_SRC_ATTENTION_FLASH_PREFILL_TILE_INL_H_
#else
#define KVCHECK_SRC_ATTENTION_FLASH_PREFILL_TILE_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "hwy/highway.h"
#include "src/attention/flash_online_softmax-inl.h"
#include "src/attention/flash_problem.h"
#include "src/attention/flash_score_rules-inl.h"
#include "src/base/static_count-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvcheck::flash_internal {
namespace HWY_NAMESPACE {
namespace prefill {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// Keys per online-softmax update: four of the driver's tiles, so that each row's reductions
// (tile max, NaN check, sum of weights), its rescale and each group's accumulator loads and
// stores are spread over four times the multiply-adds (two tiles: 3-5% slower on the 512 x
// 512 causal prefill in alternating runs on a Zen 4 core). A pass of scores reads whole
// tiles of K^T from the block's first tile and stops at the tile of the last key any row of
// the group sees, so K^T needs no padding past the tile holding key Skv - 1.
constexpr int64_t kKeys = 4 * kFlashTile;
constexpr int64_t kN = static_cast<int64_t>(hn::MaxLanes(DF()));
constexpr int64_t kTileVectors = kKeys / kN;
static_assert(kKeys % kN == 0, "a tile is a whole number of vectors");
// Rows per group: 6 x 2 score or value accumulators + 2 loaded vectors + 1 broadcast fit in
// AVX2's 16 registers; 12 independent multiply-add chains cover the FMA latency.
constexpr int kMaxGroupRows = 6;

// V rows of a tile as f32: key t's row starts `stride` floats after key t - 1's.
struct ValueRows {
  const float* first;
  int64_t stride;
  const float* operator[](int64_t t) const { return first + t * stride; }
};

// Vectors of keys per pass of the score kernel.
constexpr int kKV = kTileVectors >= 2 ? 2 : 1;
static_assert(kTileVectors % kKV == 0);

// scores[r * kKeys + t] = <q_r, k_t> for rows [0, kRows) and the kVectors x kN keys from t0.
// `kt` points at K^T[0][first key]; row d of K^T is `kt_stride` floats further, and zero past
// the keys (and for d >= D, as q is).
template <int kRows, int kVectors>
HWY_INLINE void GroupScorePass(DF df, const float* q, int64_t loop_dim, const float* kt,
                               int64_t kt_stride, int64_t t0, float* scores) {
  VF c[kRows][kVectors];
  HWY_UNROLL(6)
  for (int r = 0; r < kRows; ++r) {
    HWY_UNROLL(2)
    for (int j = 0; j < kVectors; ++j) c[r][j] = hn::Zero(df);
  }
  const float* k = kt + t0;
  for (int64_t d = 0; d < loop_dim; ++d, k += kt_stride) {
    VF x[kVectors];
    HWY_UNROLL(2)
    for (int j = 0; j < kVectors; ++j) x[j] = hn::LoadU(df, k + j * kN);
    HWY_UNROLL(6)
    for (int r = 0; r < kRows; ++r) {
      const VF w = hn::Set(df, q[r * loop_dim + d]);
      HWY_UNROLL(2)
      for (int j = 0; j < kVectors; ++j) c[r][j] = hn::MulAdd(w, x[j], c[r][j]);
    }
  }
  HWY_UNROLL(6)
  for (int r = 0; r < kRows; ++r) {
    HWY_UNROLL(2)
    for (int j = 0; j < kVectors; ++j) hn::StoreU(c[r][j], df, scores + r * kKeys + t0 + j * kN);
  }
}

// Scores of rows [0, kRows) for the first `width` keys of the tile (a multiple of kN): passes
// of kKV vectors of keys (12 accumulators for six rows), and a last pass of one vector when
// `width` ends half-way through one: the group's last keys on causal prefill's diagonal,
// where a whole pass would score up to kN - 1 keys no row sees (counted: about 6% of the
// score kernel's multiply-adds on a 512 x 512 causal prefill with 16 lanes).
template <int kRows>
HWY_INLINE void GroupScores(DF df, const float* q, int64_t loop_dim, const float* kt,
                            int64_t kt_stride, int64_t width, float* scores) {
  int64_t t0 = 0;
  for (; t0 + kKV * kN <= width; t0 += kKV * kN) {
    GroupScorePass<kRows, kKV>(df, q, loop_dim, kt, kt_stride, t0, scores);
  }
  if (t0 < width) GroupScorePass<kRows, 1>(df, q, loop_dim, kt, kt_stride, t0, scores);
}

// The online-softmax update of rows [0, kRows) over the first `width` keys of the tile
// (every end[r] <= width), row r seeing keys [begin[r], end[r]) of it (`full`: all rows see
// every key): other keys' scores become -inf, each state is rescaled to its new running max
// and the scores are replaced by their weights p_t = exp(s_t - m) (0 for -inf).
template <int kRows>
HWY_INLINE void GroupUpdate(DF df, RowState* states, float* scores, const int64_t* begin,
                            const int64_t* end, bool full, int64_t width, int64_t loop_dim) {
  const float minus_inf = -std::numeric_limits<float>::infinity();
  if (!full) {
    for (int r = 0; r < kRows; ++r) {
      float* row = scores + r * kKeys;
      std::fill(row, row + begin[r], minus_inf);
      std::fill(row + std::max(end[r], begin[r]), row + width, minus_inf);
    }
  }
  UpdateRows<kRows>(df, states, scores, kKeys, width, loop_dim);
}

// acc_r += sum_{t in [t0, t1)} p[r][t] v_t for rows [0, kRows), on kDV vectors of D from d.
template <int kRows, int kDV>
HWY_INLINE void GroupValuePass(DF df, RowState* states, const float* p, const ValueRows& values,
                               int64_t t0, int64_t t1, int64_t d) {
  VF c[kRows][kDV];
  HWY_UNROLL(6)
  for (int r = 0; r < kRows; ++r) {
    HWY_UNROLL(4)
    for (int j = 0; j < kDV; ++j) c[r][j] = hn::LoadU(df, states[r].acc + d + j * kN);
  }
  for (int64_t t = t0; t < t1; ++t) {
    const float* v = values[t] + d;
    VF x[kDV];
    HWY_UNROLL(4)
    for (int j = 0; j < kDV; ++j) x[j] = hn::LoadU(df, v + j * kN);
    HWY_UNROLL(6)
    for (int r = 0; r < kRows; ++r) {
      const VF w = hn::Set(df, p[r * kKeys + t]);
      HWY_UNROLL(4)
      for (int j = 0; j < kDV; ++j) c[r][j] = hn::MulAdd(w, x[j], c[r][j]);
    }
  }
  HWY_UNROLL(6)
  for (int r = 0; r < kRows; ++r) {
    HWY_UNROLL(4)
    for (int j = 0; j < kDV; ++j) hn::StoreU(c[r][j], df, states[r].acc + d + j * kN);
  }
}

// Vectors of D per value pass for kRows rows: kRows x kDV accumulators, kDV V vectors and a
// broadcast weight within the register file (16 on AVX2).
template <int kRows>
constexpr int GroupValueVectors() {
  return kRows <= 2 ? 4 : 2;
}

// acc_r += p[r][t] v_t for the keys [t0, t1) of every row of the group.
template <int kRows>
HWY_INLINE void GroupValues(DF df, RowState* states, const float* p, const ValueRows& values,
                            int64_t t0, int64_t t1, int64_t loop_dim) {
  constexpr int kDV = GroupValueVectors<kRows>();
  int64_t d = 0;
  for (; d + kDV * kN <= loop_dim; d += kDV * kN) {
    GroupValuePass<kRows, kDV>(df, states, p, values, t0, t1, d);
  }
  for (; d < loop_dim; d += kN) GroupValuePass<kRows, 1>(df, states, p, values, t0, t1, d);
}

// acc += p_t v_t for the keys [t0, t1) of one row.
HWY_INLINE void RowValues(DF df, RowState& state, const float* p, const ValueRows& values,
                          int64_t t0, int64_t t1, int64_t loop_dim) {
  for (int64_t t = t0; t < t1; ++t) {
    const VF w = hn::Set(df, p[t]);
    const float* v = values[t];
    for (int64_t d = 0; d < loop_dim; d += kN) {
      hn::StoreU(hn::MulAdd(w, hn::LoadU(df, v + d), hn::LoadU(df, state.acc + d)), df,
                 state.acc + d);
    }
  }
}

// acc += p_t v_t for the keys [t0, t1) of one row, skipping those its mask removes (`removed`:
// the row's mask values from the tile's first key; -inf removes): a removed key's V is never
// multiplied in, not even by its weight 0.
HWY_INLINE void RowValuesKept(DF df, RowState& state, const float* p, const ValueRows& values,
                              int64_t t0, int64_t t1, int64_t loop_dim, const float* removed) {
  const float minus_inf = -std::numeric_limits<float>::infinity();
  for (int64_t t = t0; t < t1; ++t) {
    if (removed[t] != minus_inf) RowValues(df, state, p, values, t, t + 1, loop_dim);
  }
}

// How many of mask[t0, t1) are -inf (keys the mask removes).
HWY_INLINE int64_t RemovedKeys(DF df, const float* mask, int64_t t0, int64_t t1) {
  const float minus_inf = -std::numeric_limits<float>::infinity();
  const VF minus_inf_v = hn::Set(df, minus_inf);
  int64_t removed = 0, t = t0;
  for (; t + kN <= t1; t += kN) {
    const auto removed_lanes = hn::Eq(hn::LoadU(df, mask + t), minus_inf_v);
    removed += static_cast<int64_t>(hn::CountTrue(df, removed_lanes));
  }
  for (; t < t1; ++t) removed += mask[t] == minus_inf ? 1 : 0;
  return removed;
}

// Rows [r0, r0 + kRows) of the block, a group (q rows of loop_dim floats, scaled and
// zero-padded), over the tile of keys [first, first + count); row r of the group sees the keys
// [begin[r], end[r]) of it (possibly none). `scores`: kRows x kKeys floats of scratch.
template <int kRows>
void GroupTile(DF df, const FlashProblem& problem, const RowBlock& block, int r0, int64_t first,
               int64_t count, const float* q, int64_t loop_dim, const float* kt,
               int64_t kt_stride, const ValueRows& values, const int64_t* begin,
               const int64_t* end, bool removed_keys, float* scores, RowState* states) {
  bool full = true;
  int64_t common_begin = 0, common_end = kKeys, last_end = 0;
  for (int r = 0; r < kRows; ++r) {
    full = full && begin[r] == 0 && end[r] == kKeys;
    common_begin = std::max(common_begin, begin[r]);
    common_end = std::min(common_end, end[r]);
    last_end = std::max(last_end, end[r]);
  }
  // Keys past every row's range (a short last tile, the diagonal of causal prefill) are
  // neither scored nor weighed, in whole vectors.
  const int64_t width = (last_end + kN - 1) / kN * kN;
  GroupScores<kRows>(df, q, loop_dim, kt, kt_stride, width, scores);
  // The softcap, ALiBi and mask on the scored keys (the rest become -inf in GroupUpdate).
  ApplyScoreRules<kRows, kKeys>(df, problem, block, r0, first, std::min(width, count), scores);
  GroupUpdate<kRows>(df, states, scores, begin, end, full, width, loop_dim);
  // acc += p v over the keys every row of the group sees, [cb, ce), in registers; each row's
  // other keys one by one. Where the mask removes keys of the tile, [cb, ce) is the longer
  // side of the common range that no row's mask removes a key of (a left-padded row removes
  // its first keys), and the one-by-one keys skip the removed ones.
  int64_t cb = common_begin, ce = common_end;
  const float* masks[kRows] = {};
  if (removed_keys) {
    const float minus_inf = -std::numeric_limits<float>::infinity();
    int64_t first_removed = ce, last_removed = cb - 1;
    for (int r = 0; r < kRows; ++r) {
      masks[r] = problem.MaskRow(block.batch, block.head[r0 + r], block.query[r0 + r]) + first;
      for (int64_t t = cb; t < ce; ++t) {
        if (masks[r][t] != minus_inf) continue;
        first_removed = std::min(first_removed, t);
        last_removed = std::max(last_removed, t);
      }
    }
    if (first_removed < ce) {
      if (first_removed - cb >= ce - (last_removed + 1)) {
        ce = first_removed;
      } else {
        cb = last_removed + 1;
      }
    }
  }
  auto row_values = [&](int r, int64_t t0, int64_t t1) HWY_ATTR {
    const float* p = scores + r * kKeys;
    if (removed_keys) {
      RowValuesKept(df, states[r], p, values, t0, t1, loop_dim, masks[r]);
    } else {
      RowValues(df, states[r], p, values, t0, t1, loop_dim);
    }
  };
  if (cb < ce) {
    GroupValues<kRows>(df, states, scores, values, cb, ce, loop_dim);
    for (int r = 0; r < kRows; ++r) {
      row_values(r, begin[r], cb);
      row_values(r, ce, end[r]);
    }
  } else {  // no key every row sees (a row of the group sees none, or windows barely overlap)
    for (int r = 0; r < kRows; ++r) row_values(r, begin[r], end[r]);
  }
}

// The block's keys, tile by tile, in groups of up to six rows (as even as possible). Row r
// (its q scaled and zero-padded to loop_dim at q_rows + r * loop_dim) sees the keys
// [lo[r], hi[r]) that its mask, if any, does not remove. Scratch: `widened` holds kKeys x
// loop_dim floats (V rows that cannot be read in place).
inline void PrefillTiles(DF df, const FlashProblem& problem, const RowBlock& block,
                         int64_t loop_dim, const int64_t* lo, const int64_t* hi,
                         const float* q_rows, float* widened, RowState* states) {
  alignas(64) float scores[kMaxGroupRows * kKeys];  // one group's at a time
  const int64_t D = problem.shape.head_dim;
  const int64_t b = block.batch, kv_head = block.kv_head;
  const int R = block.num_rows;
  const int groups = (R + kMaxGroupRows - 1) / kMaxGroupRows;
  int group_rows[kMaxBlockRows];
  for (int g = 0, r0 = 0; g < groups; ++g) {
    group_rows[g] = (R - r0) / (groups - g);
    r0 += group_rows[g];
  }
  const float* kt_head = problem.k_transposed +
                         (b * problem.shape.num_kv_heads + kv_head) * PaddedDim(D) *
                             problem.kt_stride;
  const bool v_in_place = problem.v.dtype == DType::kF32 && problem.v.stride[3] == 1 &&
                          D % static_cast<int64_t>(hn::Lanes(df)) == 0;
  for (int64_t first = block.key_begin; first < block.key_end; first += kKeys) {
    const int64_t count = std::min(kKeys, block.key_end - first);
    // Row r's rules let it see the keys [begin[r], end[r]) of the tile (of its first
    // `count`), of which its mask removes removed[r].
    int64_t begin[kMaxBlockRows], end[kMaxBlockRows], removed[kMaxBlockRows];
    bool any_allowed = false;
    for (int r = 0; r < R; ++r) {
      begin[r] = std::clamp<int64_t>(lo[r] - first, 0, count);
      end[r] = std::clamp<int64_t>(hi[r] - first, begin[r], count);
      removed[r] = problem.mask == nullptr
                       ? 0
                       : RemovedKeys(df, problem.MaskRow(b, block.head[r], block.query[r]) + first,
                                     begin[r], end[r]);
      const int64_t seen = end[r] - begin[r] - removed[r];
      states[r].allowed += seen;
      any_allowed = any_allowed || seen > 0;
    }
    if (!any_allowed) continue;
    ValueRows values;
    if (v_in_place) {
      values = {problem.v.F32Row(b, kv_head, first), problem.v.stride[2]};
    } else {
      for (int64_t t = 0; t < count; ++t) {
        float* out = widened + t * loop_dim;
        problem.v.ReadRow(b, kv_head, first + t, D, out);
        std::fill(out + D, out + loop_dim, 0.0f);
      }
      values = {widened, loop_dim};
    }
    const float* kt = kt_head + first;
    const int64_t kt_stride = problem.kt_stride;
    for (int g = 0, r0 = 0; g < groups; ++g) {
      const int rows = group_rows[g];
      const float* q = q_rows + r0 * loop_dim;
      const int64_t* row_begin = begin + r0;
      const int64_t* row_end = end + r0;
      RowState* row_states = states + r0;
      bool removed_keys = false;
      for (int r = r0; r < r0 + rows; ++r) removed_keys = removed_keys || removed[r] > 0;
      auto group = [&](auto rows_tag) HWY_ATTR {
        GroupTile<decltype(rows_tag)::value>(df, problem, block, r0, first, count, q, loop_dim,
                                             kt, kt_stride, values, row_begin, row_end,
                                             removed_keys, scores, row_states);
      };
      kvcheck::HWY_NAMESPACE::WithStaticCount<kMaxGroupRows>(rows, group);
      r0 += rows;
    }
  }
}

}  // namespace prefill
}  // namespace HWY_NAMESPACE
}  // namespace kvcheck::flash_internal
HWY_AFTER_NAMESPACE();

#endif  // KVCHECK_SRC_ATTENTION_FLASH_PREFILL_TILE_INL_H_
