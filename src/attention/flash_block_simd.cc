// The Highway path's general tile kernel (dynamic dispatch over the compiled targets): any
// rules, any number of rows. Runs of keys that every row of a small block sees (a mask, if
// any, finite there) go to the dense decode kernel instead (flash_decode_simd.cc); prefill
// blocks (K transposed by the driver) whose causal and window rules give each row one range of
// keys (default key positions) go to the register-blocked groups of flash_prefill_tile-inl.h.
//
// Otherwise keys are processed in tiles of kTile. For each tile:
//   1. rows of K and V are used in place when they are f32 with unit stride and a whole
//      number of vectors long, otherwise widened into zero-padded scratch rows;
//   2. scores s[r][t] = <q_r * scale, k_t> for every row of the block, one K load shared by
//      up to four rows; then softcap, ALiBi and the mask (scalar, only when enabled);
//   3. per row, the tile max m_t, the new running max m = max(m_old, m_t), the rescale of the
//      accumulator by exp(m_old - m), and p_t = exp(s_t - m) with the vector exp of
//      flash_exp-inl.h;
//   4. acc += sum_t p_t v_t: register-blocked (4 rows x 2 vectors of D) when every row allows
//      every key of the tile, key by key per row otherwise (so a key a row may not see is never
//      multiplied in, not even by 0: 0 * NaN would leak a masked NaN).
// NaN is never hidden: the softmax's exp (flash_exp-inl.h) returns 0 for NaN, so NaN and +inf
// scores are detected explicitly and mark the row (FinalizeRow writes NaN).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "src/attention/flash_problem.h"
#include "src/attention/key_rules.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/attention/flash_block_simd.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/cache_control.h"
#include "hwy/highway.h"
// After foreach_target.h: compiled once per target with this file.
#include "src/attention/flash_exp-inl.h"
#include "src/attention/flash_prefill_tile-inl.h"
#include "src/base/static_count-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvcheck::flash_internal {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr int64_t kTile = kFlashTile;

// Scratch of one thread: the block's scaled q rows, the tile's widened K/V rows, scores.
struct Scratch {
  std::vector<float> q;       // kMaxBlockRows x padded D
  std::vector<float> k, v;    // kTile x padded D (used when rows are not usable in place)
  float scores[kMaxBlockRows][kTile];
  bool allowed[kMaxBlockRows][kTile];
};

// Makes `scratch` hold at least `count` floats; never shrinks it. The prefill groups need V
// scratch for kKeys rows and the tile path for kTile: resized to each in turn, the vector
// zero-filled 96 rows (24 KB at D = 64, most of the first-level cache) on every block of a
// prefill. Every user writes the rows (and their padding) it reads, so nothing relies on the
// zeros.
inline void GrowScratch(std::vector<float>& scratch, int64_t count) {
  if (static_cast<int64_t>(scratch.size()) < count) scratch.resize(count);
}

// K or V rows of a tile: pointers to padded f32 rows of `loop_dim` elements.
struct TileRows {
  const float* row[kTile];
};

template <class DF>
void LoadTileRows(DF df, const Operand& operand, int64_t b, int64_t kv_head, int64_t first,
                  int64_t count, int64_t head_dim, int64_t loop_dim, std::vector<float>& scratch,
                  TileRows& rows) {
  const bool in_place = operand.dtype == DType::kF32 && operand.stride[3] == 1 &&
                        head_dim % static_cast<int64_t>(hn::Lanes(df)) == 0;
  for (int64_t t = 0; t < count; ++t) {
    if (in_place) {
      rows.row[t] = operand.F32Row(b, kv_head, first + t);
      continue;
    }
    float* out = scratch.data() + t * loop_dim;
    operand.ReadRow(b, kv_head, first + t, head_dim, out);
    std::fill(out + head_dim, out + loop_dim, 0.0f);
    rows.row[t] = out;
  }
}

// scores[r][t] = <q_r, k_t> for rows [r0, r0 + kRows), sharing each K load (few rows:
// decode). One horizontal sum per (row, key).
template <int kRows, class DF>
void DotRows(DF df, const float* q, int64_t loop_dim, int r0, const TileRows& keys,
             int64_t count, float (*scores)[kTile]) {
  static_assert(kRows >= 1 && kRows <= 4);
  const size_t N = hn::Lanes(df);
  // Named accumulators (not an array) so that they stay in registers.
  const float* q0 = q + r0 * loop_dim;
  const float* q1 = q0 + (kRows > 1 ? loop_dim : 0);
  const float* q2 = q0 + (kRows > 2 ? 2 * loop_dim : 0);
  const float* q3 = q0 + (kRows > 3 ? 3 * loop_dim : 0);
  for (int64_t t = 0; t < count; ++t) {
    const float* k = keys.row[t];
    auto a0 = hn::Zero(df), a1 = hn::Zero(df), a2 = hn::Zero(df), a3 = hn::Zero(df);
    for (int64_t d = 0; d < loop_dim; d += N) {
      const auto kv = hn::LoadU(df, k + d);
      a0 = hn::MulAdd(hn::LoadU(df, q0 + d), kv, a0);
      if constexpr (kRows > 1) a1 = hn::MulAdd(hn::LoadU(df, q1 + d), kv, a1);
      if constexpr (kRows > 2) a2 = hn::MulAdd(hn::LoadU(df, q2 + d), kv, a2);
      if constexpr (kRows > 3) a3 = hn::MulAdd(hn::LoadU(df, q3 + d), kv, a3);
    }
    scores[r0][t] = hn::GetLane(hn::SumOfLanes(df, a0));
    if constexpr (kRows > 1) scores[r0 + 1][t] = hn::GetLane(hn::SumOfLanes(df, a1));
    if constexpr (kRows > 2) scores[r0 + 2][t] = hn::GetLane(hn::SumOfLanes(df, a2));
    if constexpr (kRows > 3) scores[r0 + 3][t] = hn::GetLane(hn::SumOfLanes(df, a3));
  }
}

// Many rows (prefill): scores = Q Kt over K transposed once per (b, kv_head) by the driver,
// so each score vector is a run of broadcast-multiply-adds with no horizontal sums; 4 rows x 2
// vectors of keys stay in registers.
// `transposed` points at Kt[0][first key of the tile]; row d is `kt_stride` floats further,
// and keys past `count` up to kTile are zero.
template <class DF>
void DotRowsTransposed(DF df, const float* q, int64_t loop_dim, int num_rows, int64_t count,
                       const float* transposed, int64_t kt_stride, float (*scores)[kTile]) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const int64_t key_vectors = (count + N - 1) / N;
  for (int r0 = 0; r0 < num_rows; r0 += 4) {
    const int rows = std::min(4, num_rows - r0);
    // Rows past the block repeat its last row (their results are not stored).
    const float* q0 = q + r0 * loop_dim;
    const float* q1 = q + (r0 + std::min(1, rows - 1)) * loop_dim;
    const float* q2 = q + (r0 + std::min(2, rows - 1)) * loop_dim;
    const float* q3 = q + (r0 + std::min(3, rows - 1)) * loop_dim;
    for (int64_t kv = 0; kv < key_vectors; kv += 2) {
      // Named accumulators: 4 rows x 2 vectors of keys in registers over all of D.
      auto c00 = hn::Zero(df), c01 = hn::Zero(df), c10 = hn::Zero(df), c11 = hn::Zero(df);
      auto c20 = hn::Zero(df), c21 = hn::Zero(df), c30 = hn::Zero(df), c31 = hn::Zero(df);
      const float* kt = transposed + kv * N;
      for (int64_t d = 0; d < loop_dim; ++d, kt += kt_stride) {
        const auto k0 = hn::LoadU(df, kt);
        const auto k1 = hn::LoadU(df, kt + N);  // within kTile: zero keys past `count`
        const auto x0 = hn::Set(df, q0[d]), x1 = hn::Set(df, q1[d]);
        const auto x2 = hn::Set(df, q2[d]), x3 = hn::Set(df, q3[d]);
        c00 = hn::MulAdd(x0, k0, c00);
        c01 = hn::MulAdd(x0, k1, c01);
        c10 = hn::MulAdd(x1, k0, c10);
        c11 = hn::MulAdd(x1, k1, c11);
        c20 = hn::MulAdd(x2, k0, c20);
        c21 = hn::MulAdd(x2, k1, c21);
        c30 = hn::MulAdd(x3, k0, c30);
        c31 = hn::MulAdd(x3, k1, c31);
      }
      float* out0 = &scores[r0][kv * N];
      hn::StoreU(c00, df, out0);
      hn::StoreU(c01, df, out0 + N);
      if (rows > 1) hn::StoreU(c10, df, &scores[r0 + 1][kv * N]), hn::StoreU(c11, df, &scores[r0 + 1][kv * N + N]);
      if (rows > 2) hn::StoreU(c20, df, &scores[r0 + 2][kv * N]), hn::StoreU(c21, df, &scores[r0 + 2][kv * N + N]);
      if (rows > 3) hn::StoreU(c30, df, &scores[r0 + 3][kv * N]), hn::StoreU(c31, df, &scores[r0 + 3][kv * N + N]);
    }
  }
}

// acc_r += sum_t p[r][t] v_t for rows [r0, r0 + n), n <= 4, every key of the tile.
template <class DF>
void AccumulateDense(DF df, RowState* states, int r0, int n, const float (*p)[kTile],
                     const TileRows& values, int64_t count, int64_t loop_dim) {
  const size_t N = hn::Lanes(df);
  int64_t d = 0;
  for (; d + 2 * static_cast<int64_t>(N) <= loop_dim; d += 2 * N) {
    // Two vectors of D for up to four rows in registers across the whole tile.
    auto c00 = hn::LoadU(df, states[r0].acc + d), c01 = hn::LoadU(df, states[r0].acc + d + N);
    auto c10 = c00, c11 = c01, c20 = c00, c21 = c01, c30 = c00, c31 = c01;
    if (n > 1) c10 = hn::LoadU(df, states[r0 + 1].acc + d), c11 = hn::LoadU(df, states[r0 + 1].acc + d + N);
    if (n > 2) c20 = hn::LoadU(df, states[r0 + 2].acc + d), c21 = hn::LoadU(df, states[r0 + 2].acc + d + N);
    if (n > 3) c30 = hn::LoadU(df, states[r0 + 3].acc + d), c31 = hn::LoadU(df, states[r0 + 3].acc + d + N);
    for (int64_t t = 0; t < count; ++t) {
      const auto v0 = hn::LoadU(df, values.row[t] + d);
      const auto v1 = hn::LoadU(df, values.row[t] + d + N);
      const auto p0 = hn::Set(df, p[r0][t]);
      c00 = hn::MulAdd(p0, v0, c00);
      c01 = hn::MulAdd(p0, v1, c01);
      if (n > 1) {
        const auto p1 = hn::Set(df, p[r0 + 1][t]);
        c10 = hn::MulAdd(p1, v0, c10);
        c11 = hn::MulAdd(p1, v1, c11);
      }
      if (n > 2) {
        const auto p2 = hn::Set(df, p[r0 + 2][t]);
        c20 = hn::MulAdd(p2, v0, c20);
        c21 = hn::MulAdd(p2, v1, c21);
      }
      if (n > 3) {
        const auto p3 = hn::Set(df, p[r0 + 3][t]);
        c30 = hn::MulAdd(p3, v0, c30);
        c31 = hn::MulAdd(p3, v1, c31);
      }
    }
    hn::StoreU(c00, df, states[r0].acc + d);
    hn::StoreU(c01, df, states[r0].acc + d + N);
    if (n > 1) hn::StoreU(c10, df, states[r0 + 1].acc + d), hn::StoreU(c11, df, states[r0 + 1].acc + d + N);
    if (n > 2) hn::StoreU(c20, df, states[r0 + 2].acc + d), hn::StoreU(c21, df, states[r0 + 2].acc + d + N);
    if (n > 3) hn::StoreU(c30, df, states[r0 + 3].acc + d), hn::StoreU(c31, df, states[r0 + 3].acc + d + N);
  }
  for (; d < loop_dim; d += N) {  // an odd number of vectors: the last one row by row
    for (int r = r0; r < r0 + n; ++r) {
      auto c = hn::LoadU(df, states[r].acc + d);
      for (int64_t t = 0; t < count; ++t) {
        c = hn::MulAdd(hn::Set(df, p[r][t]), hn::LoadU(df, values.row[t] + d), c);
      }
      hn::StoreU(c, df, states[r].acc + d);
    }
  }
}

// acc += sum over allowed keys only (rows that may not see some key of the tile).
template <class DF>
void AccumulateSparse(DF df, RowState& state, const float* p, const bool* allowed,
                      const TileRows& values, int64_t count, int64_t loop_dim) {
  const size_t N = hn::Lanes(df);
  for (int64_t t = 0; t < count; ++t) {
    if (!allowed[t]) continue;
    const auto weight = hn::Set(df, p[t]);
    for (int64_t d = 0; d < loop_dim; d += N) {
      hn::StoreU(hn::MulAdd(weight, hn::LoadU(df, values.row[t] + d), hn::LoadU(df, state.acc + d)),
                 df, state.acc + d);
    }
  }
}

// One row's online-softmax update over a tile: rescales the state to the new running max
// and replaces the scores by their weights p_t = exp(s_t - m) (0 for keys the row may not see).
template <class DF>
void UpdateRow(DF df, RowState& state, float* scores, const bool* allowed, bool all_allowed,
               int64_t count, int64_t loop_dim) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const float minus_inf = -std::numeric_limits<float>::infinity();
  if (!all_allowed) {
    for (int64_t t = 0; t < count; ++t) {
      if (!allowed[t]) scores[t] = minus_inf;
    }
  }
  // Tile max, and NaN / +inf detection (the exp maps NaN to 0: they must be caught here).
  const auto inf_v = hn::Set(df, std::numeric_limits<float>::infinity());
  auto max_v = hn::Set(df, minus_inf);
  auto bad = hn::Zero(df);  // lanes that saw NaN or +inf become nonzero
  int64_t t = 0;
  for (; t + N <= count; t += N) {
    const auto s = hn::LoadU(df, scores + t);
    max_v = hn::Max(max_v, s);
    bad = hn::Or(bad, hn::VecFromMask(df, hn::Not(hn::Lt(s, inf_v))));
  }
  float tile_max = hn::GetLane(hn::MaxOfLanes(df, max_v));
  bool nan = !hn::AllTrue(df, hn::Eq(bad, hn::Zero(df)));
  for (; t < count; ++t) {
    nan = nan || !(scores[t] < std::numeric_limits<float>::infinity());
    tile_max = std::fmax(tile_max, scores[t]);
  }
  if (nan) {
    // A NaN (Max may have dropped it) or +inf score: the row's output is NaN.
    state.nan = true;
    for (int64_t i = 0; i < count; ++i) {
      if (std::isnan(scores[i])) scores[i] = minus_inf;
    }
  }
  const float max = std::fmax(state.max, tile_max);
  if (max > state.max) {
    // m_old -> m: acc and l scale by exp(m_old - m) (0 when m_old is -inf).
    const float alpha = std::exp(state.max - max);
    const auto alpha_v = hn::Set(df, alpha);
    for (int64_t d = 0; d < loop_dim; d += N) {
      hn::StoreU(hn::Mul(hn::LoadU(df, state.acc + d), alpha_v), df, state.acc + d);
    }
    state.sum *= alpha;
    state.max = max;
  }
  // p_t = exp(s_t - m): a -inf score (or a slot the row may not see) gives exp(-inf) = 0; with
  // m = -inf too, exp(NaN) = 0 is the weight we want (every allowed score is -inf).
  const auto m_v = hn::Set(df, state.max);
  auto sum_v = hn::Zero(df);
  t = 0;
  for (; t + N <= count; t += N) {
    const auto p = ExpOfNonPositive(df, hn::Sub(hn::LoadU(df, scores + t), m_v));
    hn::StoreU(p, df, scores + t);
    sum_v = hn::Add(sum_v, p);
  }
  float sum = hn::GetLane(hn::SumOfLanes(df, sum_v));
  for (; t < count; ++t) {
    const float p = scores[t] == minus_inf ? 0.0f : std::exp(scores[t] - state.max);
    scores[t] = p;
    sum += p;
  }
  state.sum += sum;
}

void ProcessBlockImpl(const FlashProblem& problem, const RowBlock& block, RowState* states) {
  const hn::ScalableTag<float> df;
  const int64_t D = problem.shape.head_dim;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const int64_t loop_dim = (D + N - 1) / N * N;  // <= PaddedDim(D)
  const int64_t b = block.batch;
  const int R = block.num_rows;
  thread_local Scratch scratch;
  GrowScratch(scratch.q, kMaxBlockRows * loop_dim);
  GrowScratch(scratch.k, kTile * loop_dim);
  GrowScratch(scratch.v, kTile * loop_dim);
  // Scaled, zero-padded q rows; positions, slopes and (when the rules allow) key ranges.
  int64_t qpos[kMaxBlockRows], lo[kMaxBlockRows], hi[kMaxBlockRows];
  float slope[kMaxBlockRows];
  // Default key positions and no mask: row r sees exactly the keys [lo, hi).
  const bool ranges = problem.kv_positions == nullptr && problem.mask == nullptr;
  const float scale = problem.scale;
  const auto scale_v = hn::Set(df, scale);
  for (int r = 0; r < R; ++r) {
    float* q = scratch.q.data() + r * loop_dim;
    const float* in_place = problem.q.F32Row(b, block.head[r], block.query[r]);
    if (in_place != nullptr && D == loop_dim) {  // f32, whole vectors: no padding
      for (int64_t d = 0; d < D; d += N) {
        hn::StoreU(hn::Mul(hn::LoadU(df, in_place + d), scale_v), df, q + d);
      }
    } else {
      problem.q.ReadRow(b, block.head[r], block.query[r], D, q);
      for (int64_t d = 0; d < D; ++d) q[d] *= scale;
      std::fill(q + D, q + loop_dim, 0.0f);
    }
    qpos[r] = problem.QueryPosition(b, block.query[r]);
    slope[r] = problem.Slope(block.head[r]);
    lo[r] = 0;
    hi[r] = problem.shape.kv_len;
    if (problem.causal) hi[r] = std::min(hi[r], qpos[r] + 1);
    if (problem.window > 0) lo[r] = std::max<int64_t>(0, qpos[r] - problem.window + 1);
    if (qpos[r] < 0) hi[r] = lo[r];
  }
  const bool post_process = problem.softcap > 0 || problem.alibi_slopes != nullptr ||
                            problem.mask != nullptr;
  // The prefill groups take a softcap, ALiBi and a mask whose keys are adjacent in memory.
  if (problem.k_transposed != nullptr && problem.kv_positions == nullptr &&
      (problem.mask == nullptr || problem.mask_stride[3] == 1)) {
    GrowScratch(scratch.v, prefill::kKeys * loop_dim);
    prefill::PrefillTiles(df, problem, block, loop_dim, lo, hi, scratch.q.data(),
                          scratch.v.data(), states);
    return;
  }
  TileRows keys, values;
  for (int64_t first = block.key_begin; first < block.key_end; first += kTile) {
    const int64_t count = std::min(kTile, block.key_end - first);
    // Which keys each row may see; skip tiles no row sees.
    bool all_allowed = true, any_allowed = false;
    for (int r = 0; r < R; ++r) {
      if (ranges) {
        const int64_t from = std::max(first, lo[r]), to = std::min(first + count, hi[r]);
        const int64_t seen = std::max<int64_t>(0, to - from);
        states[r].allowed += seen;
        any_allowed = any_allowed || seen > 0;
        if (seen == count) {
          std::fill(scratch.allowed[r], scratch.allowed[r] + count, true);
          continue;
        }
        all_allowed = false;
        for (int64_t t = 0; t < count; ++t) {
          scratch.allowed[r][t] = first + t >= lo[r] && first + t < hi[r];
        }
        continue;
      }
      for (int64_t t = 0; t < count; ++t) {
        const int64_t kpos = problem.KeyPosition(b, first + t);
        bool ok = attention_internal::KeyAllowed(qpos[r], kpos, problem.causal, problem.window);
        if (ok && problem.mask != nullptr) {
          ok = !attention_internal::IsMinusInfinity(
              problem.MaskValue(b, block.head[r], block.query[r], first + t));
        }
        scratch.allowed[r][t] = ok;
        all_allowed = all_allowed && ok;
        any_allowed = any_allowed || ok;
        states[r].allowed += ok ? 1 : 0;
      }
    }
    if (!any_allowed) continue;
    // Decode streams K and V from memory: request the rows two tiles ahead, a few cache lines
    // per key, so that their misses overlap this tile's arithmetic without flooding the
    // line-fill buffers.
    if (problem.k_transposed == nullptr) {
      const int64_t row_bytes = D * problem.k.stride[3] * DTypeSize(problem.k.dtype);
      const int64_t ahead_end = std::min(block.key_end, first + 3 * kTile);
      for (int64_t j = first + 2 * kTile; j < ahead_end; ++j) {
        const std::byte* k_row = problem.k.Row(b, block.kv_head, j);
        const std::byte* v_row = problem.v.Row(b, block.kv_head, j);
        for (int64_t offset = 0; offset < row_bytes; offset += 64) {
          hwy::Prefetch(k_row + offset);
          hwy::Prefetch(v_row + offset);
        }
      }
    }
    LoadTileRows(df, problem.v, b, block.kv_head, first, count, D, loop_dim, scratch.v, values);
    if (problem.k_transposed != nullptr) {
      const float* kt = problem.k_transposed +
                        (b * problem.shape.num_kv_heads + block.kv_head) * PaddedDim(D) *
                            problem.kt_stride + first;
      DotRowsTransposed(df, scratch.q.data(), loop_dim, R, count, kt, problem.kt_stride,
                        scratch.scores);
    } else {
      LoadTileRows(df, problem.k, b, block.kv_head, first, count, D, loop_dim, scratch.k, keys);
      for (int r0 = 0; r0 < R; r0 += 4) {
        auto dot_rows = [&](auto rows_tag) HWY_ATTR {
          DotRows<decltype(rows_tag)::value>(df, scratch.q.data(), loop_dim, r0, keys, count,
                                             scratch.scores);
        };
        kvcheck::HWY_NAMESPACE::WithStaticCount<4>(std::min(4, R - r0), dot_rows);
      }
    }
    if (post_process) {
      for (int r = 0; r < R; ++r) {
        for (int64_t t = 0; t < count; ++t) {
          if (!scratch.allowed[r][t]) continue;
          const int64_t kpos = problem.KeyPosition(b, first + t);
          scratch.scores[r][t] = attention_internal::FinishScore(
              scratch.scores[r][t], problem.softcap, problem.inverse_softcap, slope[r], qpos[r],
              kpos, problem.MaskValue(b, block.head[r], block.query[r], first + t));
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      UpdateRow(df, states[r], scratch.scores[r], scratch.allowed[r], all_allowed, count,
                loop_dim);
    }
    if (all_allowed) {
      for (int r0 = 0; r0 < R; r0 += 4) {
        AccumulateDense(df, states, r0, std::min(4, R - r0), scratch.scores, values, count,
                        loop_dim);
      }
    } else {
      for (int r = 0; r < R; ++r) {
        AccumulateSparse(df, states[r], scratch.scores[r], scratch.allowed[r], values, count,
                         loop_dim);
      }
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kvcheck::flash_internal
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kvcheck::flash_internal {

HWY_EXPORT(ProcessBlockImpl);

void ProcessTilesSimd(const FlashProblem& problem, const RowBlock& block, RowState* states) {
  HWY_DYNAMIC_DISPATCH(ProcessBlockImpl)(problem, block, states);
}

}  // namespace kvcheck::flash_internal
#endif  // HWY_ONCE
