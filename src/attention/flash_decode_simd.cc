// The Highway path's dense decode kernel, and the split of a block's keys between it and the
// general tile kernel (flash_block_simd.cc).
//
// Decode (Sq = 1, and small Sq) streams K and V: a block's few query rows (the GQA heads of
// one KV head, a few query positions) read each K/V row once, and the arithmetic per row must
// keep up with the read. The general kernel's per-tile work (the allowed-key table, a pointer
// per row, one horizontal sum and scalar store per (row, key), one Exp pass per row) was as
// large as the arithmetic itself there. This kernel takes the runs of keys that every row of
// the block may see (the mask, if any, finite there) and does only the math; per tile of
// up to kTile keys (TileKeys) and group of up to four rows:
//   1. scores s_t = <q * scale, k_t> (flash_decode_scores-inl.h): several keys per pass over D
//      sharing each q load, the partial sums of N keys reduced into one vector of N scores;
//      then the softcap, ALiBi and mask values in vectors (flash_score_rules-inl.h);
//   2. one online-softmax update per row and tile: m = max(m_old, max_t s_t); acc and l scale
//      by exp(m_old - m) only when m grows; p_t = exp(s_t - m) with the vector exp of
//      flash_exp-inl.h, the group's rows interleaved; l += sum_t p_t;
//   3. acc += sum_t p_t v_t with rows x kDV vectors of accumulators in registers across the
//      tile (every key multiplies in, also with p_t = 0: 0 * NaN must reach acc).
// Read in place, a block's keys are taken as four segments side by side where no score rule
// depends on a key's position (segmented tiles, kSegmentShift): four K and four V streams.
// K/V rows are read in place when their elements are contiguous and D is a whole number of
// vectors (f32; bf16 and, where the target converts exactly, f16 widened in registers);
// otherwise each tile is widened into zero-padded f32 scratch rows first.
// NaN is never hidden: the softmax's exp (flash_exp-inl.h) maps NaN to 0, so NaN and +inf
// scores are caught before it and mark the row (FinalizeRow writes NaN), as in the general
// kernel.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "src/attention/flash_problem.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/attention/flash_decode_simd.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// After foreach_target.h: compiled once per target with this file.
#include "hwy/aligned_allocator.h"
#include "hwy/highway.h"
#include "src/attention/flash_decode_scores-inl.h"
#include "src/attention/flash_online_softmax-inl.h"
#include "src/attention/flash_score_rules-inl.h"
#include "src/base/static_count-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvcheck::flash_internal {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr int kMaxGroupRows = 4;

// Vectors of D per pass of the value update for a group of `rows` rows: 4, 2 or 1, the most
// for which the rows x kDV accumulators, the rows' broadcast weights of the key and one V
// vector fit in the register file (AccumulatePass keeps them all there). GQA's three rows on
// AVX2 take 12 + 3 + 1 of the 16: two passes of four vectors over D = 64 instead of four of
// two (when the V vectors were all loaded before the weights, 4 + 1 + 8 left no room for
// four), half the broadcasts of the weights and of the passes' loop work. Zen 2 VM (one
// core, 2026-12-04, BM_FlashDecode and BM_DecodePairedLayers, ab_pair.sh, four pairs each):
// one cached (1, 4096) call 0.98x the time, 30 layers from memory 0.94x.
constexpr int ValueVectors(int rows) {
  auto fits = [rows](int vectors) { return rows * vectors + rows + 1 <= kVectorRegisters; };
  return fits(4) ? 4 : fits(2) ? 2 : 1;
}

// F16C's vcvtph2ps is exact for every f16 (subnormals, inf, NaN). Highway 1.0.3's emulation on
// older targets turns exponent 31 (inf, NaN) into finite numbers, so there f16 rows take the
// exact scalar widening (Operand::ReadRow) instead.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)
constexpr bool kExactF16InRegisters = true;
#else
constexpr bool kExactF16InRegisters = false;
#endif

// Independent multiply-add chains that keep both FMA units busy through their 4-cycle latency.
constexpr int kMinChains = 8;

// acc_r += sum_{t < count} p[r * kTile + t] v_t for rows [0, kRows), on kDV vectors of D from
// d, with all kRows x kDV accumulators in registers over the tile; with fewer than kMinChains
// of them, even and odd keys go to two sets (added at the end), or the chain of one
// accumulator through the keys would bound the loop by latency.
template <int kRows, int kDV, typename T>
HWY_INLINE void AccumulatePass(DF df, RowState* states, const float* p, const Rows<T>& values,
                               int64_t count, int64_t d) {
  constexpr bool kSplit = kRows * kDV < kMinChains;
  VF c[kRows][kDV], e[kRows][kDV];
  HWY_UNROLL(4)
  for (int r = 0; r < kRows; ++r) {
    HWY_UNROLL(4)
    for (int j = 0; j < kDV; ++j) {
      c[r][j] = hn::LoadU(df, states[r].acc + d + j * kN);
      e[r][j] = hn::Zero(df);
    }
  }
  // The key's weights first, then one V vector at a time: kRows x kDV accumulators, kRows
  // weights and one V vector in registers (ValueVectors).
  auto add_key = [&](int64_t t, const T* v, VF(&acc)[kRows][kDV]) HWY_ATTR {
    VF w[kRows];
    HWY_UNROLL(4)
    for (int r = 0; r < kRows; ++r) w[r] = hn::Set(df, p[r * kTile + t]);
    HWY_UNROLL(4)
    for (int j = 0; j < kDV; ++j) {
      const VF x = InRegister(LoadF32(df, v + j * kN));
      HWY_UNROLL(4)
      for (int r = 0; r < kRows; ++r) acc[r][j] = hn::MulAdd(w[r], x, acc[r][j]);
    }
  };
  // Each key's row from a pointer stepped every four keys and a table of the four offsets
  // within them (Rows::Offset): computed per key (a shift, a mask, two multiplies), the
  // address took more instructions than the key's loads (Zen 2 VM, with the four-vector
  // passes: one cached call 0.98x the time, 30 layers from memory 0.89x, 4 of 4 pairs).
  // Even keys into c, odd ones into e with kSplit.
  const int64_t offsets[4] = {0, values.Offset(1), values.Offset(2), values.Offset(3)};
  const int64_t step = values.Offset(4);
  const T* v = values.first + d;
  int64_t t = 0;
  if constexpr (kSplit) {
    for (; t + 2 <= count; t += 2) {
      add_key(t, v + offsets[t & 3], c);
      add_key(t + 1, v + offsets[(t + 1) & 3], e);
      if ((t & 3) == 2) v += step;
    }
  }
  for (; t < count; ++t) {
    add_key(t, v + offsets[t & 3], c);
    if ((t & 3) == 3) v += step;
  }
  HWY_UNROLL(4)
  for (int r = 0; r < kRows; ++r) {
    HWY_UNROLL(4)
    for (int j = 0; j < kDV; ++j) {
      hn::StoreU(kSplit ? hn::Add(c[r][j], e[r][j]) : c[r][j], df, states[r].acc + d + j * kN);
    }
  }
}

template <int kRows, typename T>
void AccumulateTile(DF df, RowState* states, const float* p, const Rows<T>& values, int64_t count,
                    int64_t loop_dim) {
  constexpr int kDV = ValueVectors(kRows);
  int64_t d = 0;
  for (; d + kDV * kN <= loop_dim; d += kDV * kN) {
    AccumulatePass<kRows, kDV>(df, states, p, values, count, d);
  }
  for (; d < loop_dim; d += kN) AccumulatePass<kRows, 1>(df, states, p, values, count, d);
}

// Scratch of one thread: scaled q rows and widened K/V tiles (rows of loop_dim floats),
// scores (then weights) of the block's rows, kTile apart (on the heap, as many rows as the
// largest block so far: kMaxBlockRows rows of kTile would be 768 KiB of thread-local storage,
// more than a library loaded by dlopen may get).
struct DenseScratch {
  std::vector<float> q, k, v;
  hwy::AlignedFreeUniquePtr<float[]> scores;
  int64_t score_rows = 0;
  float* Scores(int rows) {
    if (rows > score_rows) {
      scores = hwy::AllocateAligned<float>(static_cast<size_t>(rows * kTile));
      score_rows = rows;
    }
    return scores.get();
  }
};

// Keys per tile: the caller's choice, if any; else kTile for a block of one group whose value
// update reads each V row whole in one pass, so that its K and V rows are read once; where
// the tile's rows are read again (several groups, from the second-level cache; or a value
// update of several strided passes over D, `strided_values`) as many keys as keep a tile's K
// and V within kTileBudgetBytes, or within kStridedTileBudgetBytes for strided passes; widened
// rows (scratch written, then read) in tiles of kFlashTile, which stay in L1.
// Why the smaller budget for strided passes: each pass reads a few vectors of every V row of
// the tile, so the whole tile's V is read once per pass and must stay close between them.
// Zen 2 VM (AVX2: three rows, D = 64, then four passes over D, now two; 512 KiB second-level
// cache), alternating pairs of builds of BM_DecodePairedLayers (2026-12-04): 256-key tiles against
// 4096-key ones took 0.93-0.95x the time for one cached layer (faster in 11 of 14 pairs) and
// 0.91-1.04x, median of the three sets 0.96x, for 30 layers from memory (faster in 10 of 14);
// 1024-key tiles could not be told from 4096 (1.00x and 1.02x, four pairs); 128 and 512 keys
// against 256 went either way by up to 10% between hot and cold.
constexpr int64_t kTileBudgetBytes = 512 * 1024;
constexpr int64_t kStridedTileBudgetBytes = 128 * 1024;
int64_t TileKeys(const FlashProblem& p, bool widened, int groups, bool strided_values,
                 int64_t row_bytes) {
  if (p.decode_tile_keys > 0) return std::min(p.decode_tile_keys, kTile);
  if (widened) return kFlashTile;
  if (groups == 1 && !strided_values) return kTile;
  const int64_t budget = strided_values ? kStridedTileBudgetBytes : kTileBudgetBytes;
  const int64_t fit = budget / (2 * std::max<int64_t>(row_bytes, 1));
  return std::clamp(fit / kFlashTile * kFlashTile, kFlashTile, kTile);
}

// Rows [r0, r0 + kRows) of the block over the tile of keys [first, first + count).
template <int kRows, typename T>
HWY_INLINE void GroupTile(DF df, const FlashProblem& p, const RowBlock& block, int r0,
                          int64_t first, const float* q, int64_t loop_dim, const Rows<T>& keys,
                          const Rows<T>& values, int64_t count, const Rows<T>* prefetch,
                          int64_t prefetch_bytes, float* scores, RowState* states) {
  ScoreTile<kRows>(df, q, loop_dim, keys, count, prefetch, prefetch_bytes, scores);
  ApplyScoreRules<kRows, kTile>(df, p, block, r0, first, count, scores);
  // Every key of the tile is one all rows may see (-inf past the tile's keys).
  UpdateRows<kRows>(df, states, scores, kTile, WholeVectors(df, count), loop_dim);
  AccumulateTile<kRows>(df, states, scores, values, count, loop_dim);
}

// Segmented tiles: a block's keys are cut in 2^kSegmentShift (four) equal segments, and a
// tile takes the next keys of every segment, consecutive keys from different segments (Rows),
// so that the score pass reads four K streams at once and the value pass four V streams. Some
// cores fetch several streams from memory much faster than one: a Zen 2 VM's one core read
// 30 layers' K/V at 21.4 GB/s as eight streams against 12.2 front to back, and there (AVX2,
// three rows, D = 64, 256-key tiles) four segments took 30 cold layers 0.71x the time and one
// cached layer 0.98x (four alternating pairs of builds, 2026-12-04; BM_DecodePairedLayers);
// eight segments measured between one and four. The keys' order within the block only
// changes the rounding of the sums (the softmax is the same over any order); the score rules
// that depend on a key's position (ALiBi, a mask) need plain tiles.
constexpr int kSegmentShift = 2;

bool SegmentsAllowed(const FlashProblem& p) {
  return p.alibi_slopes == nullptr && p.mask == nullptr;
}

// The rows of `op` read in place from key `first` on: one after another or, with a segment
// length, as a segmented tile of 2^kSegmentShift segments of that many keys.
template <typename T>
Rows<T> InPlaceRows(const Operand& op, int64_t b, int64_t kv_head, int64_t first,
                    int64_t segment = 0) {
  static_assert(kSegmentShift <= kMaxSegmentShift, "Rows::Offset's four-key period");
  return {reinterpret_cast<const T*>(op.Row(b, kv_head, first)), op.stride[2],
          segment * op.stride[2], segment > 0 ? kSegmentShift : 0};
}

// T: element type of the rows as read (float for widened scratch rows).
template <typename T, bool kWiden>
void DenseTiles(DF df, const FlashProblem& p, const RowBlock& block, RowState* states,
                int64_t loop_dim, DenseScratch& scratch) {
  const int64_t D = p.shape.head_dim;
  const int64_t b = block.batch, kv_head = block.kv_head;
  const int R = block.num_rows;
  // Groups of at most four rows, as even as possible (7 rows: 4 + 3).
  const int groups = (R + kMaxGroupRows - 1) / kMaxGroupRows;
  const int64_t row_bytes = D * static_cast<int64_t>(sizeof(T));
  // The groups' sizes differ by at most one row; the largest (R / groups rounded up) has the
  // fewest value vectors per pass, so it decides whether any group's passes are strided (the
  // per-group test below).
  const int largest_group = (R + groups - 1) / groups;
  const bool any_strided = !kWiden && ValueVectors(largest_group) * kN < loop_dim;
  const int64_t tile = TileKeys(p, kWiden, groups, any_strided, row_bytes);
  if constexpr (kWiden) {
    scratch.k.resize(tile * loop_dim);
    scratch.v.resize(tile * loop_dim);
  }
  float* const all_scores = scratch.Scores(R);
  // The tile of `count` keys `keys` and `values`, whose first key is `first` (the positions
  // the score rules see, first + t, are only right for plain tiles: segmented ones are taken
  // only where no rule depends on the position, SegmentsAllowed).
  auto run_tile = [&](int64_t first, int64_t count, const Rows<T>& keys, const Rows<T>& values)
                      HWY_ATTR {
    // Every row of the group sees the whole tile; within a tile, K and V stay in the
    // second-level cache between the groups (TileKeys).
    for (int g = 0, r0 = 0; g < groups; ++g) {
      const int rows = (R - r0) / (groups - g);
      // V rows are read after the scores. When the value update needs several passes over D
      // (too few registers for rows x D accumulators: AVX2 and narrower, or large D), each
      // pass reads a few vectors of every row of the tile, a strided pattern the hardware
      // prefetchers pick up late: then the first group's score pass requests each V row as
      // it reaches its key, so that the misses overlap the score arithmetic. (K is read row
      // after row, which they follow; requesting it too, or all of a tile's V at once,
      // measured slower.) When one pass reads each V row whole, in key order, the rows are a
      // sequential stream like K's and are not requested: on a Zen 4 VM (AVX-512, three rows,
      // D = 64; alternating runs) a call over 4096 cached keys took 0.172-0.182 ms with the
      // request and 0.134-0.152 without, and 30 layers from memory 16.1-17.0 against
      // 11.0-12.7 ms. (On AVX2 there, four strided passes: 17-21 ms with it, 24-28 without.)
      const bool strided_values = ValueVectors(rows) * kN < loop_dim;
      const Rows<T>* prefetch = !kWiden && g == 0 && strided_values ? &values : nullptr;
      const float* q = scratch.q.data() + r0 * loop_dim;
      float* scores = all_scores + r0 * kTile;
      auto group = [&](auto rows_tag) HWY_ATTR {
        GroupTile<decltype(rows_tag)::value>(df, p, block, r0, first, q, loop_dim, keys, values,
                                             count, prefetch, row_bytes, scores, states + r0);
      };
      kvcheck::HWY_NAMESPACE::WithStaticCount<kMaxGroupRows>(rows, group);
      r0 += rows;
    }
    for (int r = 0; r < R; ++r) states[r].allowed += count;
  };
  int64_t begin = block.key_begin;
  if constexpr (!kWiden) {
    // Segmented tiles (see kSegmentShift): each segment is `segment` keys, and each tile
    // takes the next `per_segment` of every segment; the keys left over (fewer than
    // 2^kSegmentShift) follow in a plain tile. A block shorter than a tile is one segmented
    // tile of its four segments: its streams are short, and four of them at once keep more
    // lines in flight than one. GPT-2's decode (12 heads of about 100 keys from memory, one
    // thread, 2026-12-05, Zen 4 VM): the attention of 199 steps 0.103-0.107 s against
    // 0.112-0.117 when only blocks of a tile or more were segmented (three alternating pairs;
    // two threads 0.083-0.084 against 0.089-0.094); twelve such layers after a 64 MiB read,
    // 0.81-0.93x the time (two pairs).
    const int64_t segment = (block.key_end - block.key_begin) >> kSegmentShift;
    const int64_t per_segment = tile >> kSegmentShift;
    if (SegmentsAllowed(p) && per_segment >= 1 && segment >= 1) {
      for (int64_t offset = 0; offset < segment; offset += per_segment) {
        const int64_t first = block.key_begin + offset;
        run_tile(first, std::min(per_segment, segment - offset) << kSegmentShift,
                 InPlaceRows<T>(p.k, b, kv_head, first, segment),
                 InPlaceRows<T>(p.v, b, kv_head, first, segment));
      }
      begin = block.key_begin + (segment << kSegmentShift);
    }
  }
  for (int64_t first = begin; first < block.key_end; first += tile) {
    const int64_t count = std::min(tile, block.key_end - first);
    Rows<T> keys, values;
    if constexpr (kWiden) {
      for (int64_t t = 0; t < count; ++t) {
        float* k = scratch.k.data() + t * loop_dim;
        float* v = scratch.v.data() + t * loop_dim;
        p.k.ReadRow(b, kv_head, first + t, D, k);
        p.v.ReadRow(b, kv_head, first + t, D, v);
        std::fill(k + D, k + loop_dim, 0.0f);
        std::fill(v + D, v + loop_dim, 0.0f);
      }
      keys = {scratch.k.data(), loop_dim};
      values = {scratch.v.data(), loop_dim};
    } else {
      keys = InPlaceRows<T>(p.k, b, kv_head, first);
      values = InPlaceRows<T>(p.v, b, kv_head, first);
    }
    run_tile(first, count, keys, values);
  }
}

void ProcessDenseImpl(const FlashProblem& p, const RowBlock& block, RowState* states) {
  const DF df;
  const int64_t D = p.shape.head_dim;
  const int64_t loop_dim = (D + kN - 1) / kN * kN;  // <= PaddedDim(D)
  thread_local DenseScratch scratch;
  scratch.q.resize(kMaxBlockRows * loop_dim);
  for (int r = 0; r < block.num_rows; ++r) {
    float* q = scratch.q.data() + r * loop_dim;
    p.q.ReadRow(block.batch, block.head[r], block.query[r], D, q);
    for (int64_t d = 0; d < D; ++d) q[d] *= p.scale;
    std::fill(q + D, q + loop_dim, 0.0f);
  }
  // In place: contiguous elements, whole vectors (the vector loads must not read past a row).
  const DType dtype = p.k.dtype;
  const bool in_place = p.k.stride[3] == 1 && p.v.stride[3] == 1 && D % kN == 0 &&
                        (dtype != DType::kF16 || kExactF16InRegisters);
  if (!in_place) {
    DenseTiles<float, true>(df, p, block, states, loop_dim, scratch);
  } else if (dtype == DType::kF32) {
    DenseTiles<float, false>(df, p, block, states, loop_dim, scratch);
  } else if (dtype == DType::kBF16) {
    DenseTiles<hwy::bfloat16_t, false>(df, p, block, states, loop_dim, scratch);
  } else {
    DenseTiles<hwy::float16_t, false>(df, p, block, states, loop_dim, scratch);
  }
}

// Whether the mask values of every row of the block for the keys [first, last) are finite:
// none removes its key, none makes a score +inf or NaN. REQUIRES: p.mask with
// mask_stride[3] == 1.
bool MaskFiniteImpl(const FlashProblem& p, const RowBlock& block, int64_t first, int64_t last) {
  const DF df;
  const float* previous = nullptr;
  for (int r = 0; r < block.num_rows; ++r) {
    const float* row = p.MaskRow(block.batch, block.head[r], block.query[r]);
    if (row == previous) continue;  // a mask row broadcast over heads or queries: read once
    previous = row;
    int64_t j = first;
    auto finite = hn::IsFinite(hn::Zero(df));  // all true
    for (; j + kN <= last; j += kN) finite = hn::And(finite, hn::IsFinite(hn::LoadU(df, row + j)));
    if (!hn::AllTrue(df, finite)) return false;
    for (; j < last; ++j) {
      if (!std::isfinite(row[j])) return false;
    }
  }
  return true;
}

}  // namespace HWY_NAMESPACE
}  // namespace kvcheck::flash_internal
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kvcheck::flash_internal {

HWY_EXPORT(ProcessDenseImpl);
HWY_EXPORT(MaskFiniteImpl);

namespace {

// Runs keys [from, to) of `block` through the dense kernel or the general one.
void ProcessRun(const FlashProblem& p, const RowBlock& block, int64_t from, int64_t to,
                bool dense, RowState* states) {
  if (from >= to) return;
  RowBlock part = block;
  part.key_begin = from;
  part.key_end = to;
  if (dense) {
    HWY_DYNAMIC_DISPATCH(ProcessDenseImpl)(p, part, states);
  } else {
    ProcessTilesSimd(p, part, states);
  }
}

// Calls `classify(first, last)` for each tile of kFlashTile keys of [from, to), whether it
// is dense, and hands maximal runs of one kind to ProcessRun.
template <typename Classify>
void ProcessTileRuns(const FlashProblem& p, const RowBlock& block, int64_t from, int64_t to,
                     RowState* states, Classify classify) {
  int64_t run_begin = from;
  bool run_dense = false;
  for (int64_t first = from; first < to; first += kFlashTile) {
    const bool dense = classify(first, std::min(first + kFlashTile, to));
    if (first == from) {
      run_dense = dense;
    } else if (dense != run_dense) {
      ProcessRun(p, block, run_begin, first, run_dense, states);
      run_begin = first;
      run_dense = dense;
    }
  }
  ProcessRun(p, block, run_begin, to, run_dense, states);
}

// Keys [from, to) that the rules let every row see (`dense`), or not: with a mask, only its
// tiles whose values are all finite for every row go to the dense kernel (a left-padded
// batch row's mask removes its first keys and adds 0 to the rest).
void ProcessRange(const FlashProblem& p, const RowBlock& block, int64_t from, int64_t to,
                  bool dense, RowState* states) {
  if (!dense || p.mask == nullptr) {
    ProcessRun(p, block, from, to, dense, states);
    return;
  }
  ProcessTileRuns(p, block, from, to, states, [&](int64_t first, int64_t last) {
    return HWY_DYNAMIC_DISPATCH(MaskFiniteImpl)(p, block, first, last);
  });
}

}  // namespace

void ProcessBlockSimd(const FlashProblem& p, const RowBlock& block, RowState* states) {
  // The dense kernel reads K per key (not the transposed K of prefill), and a mask's values
  // along the keys in vectors (flash_score_rules-inl.h).
  const bool eligible = p.k_transposed == nullptr &&
                        (p.mask == nullptr || p.mask_stride[3] == 1) &&
                        block.key_begin < block.key_end;
  int64_t q_min = std::numeric_limits<int64_t>::max();
  int64_t q_max = std::numeric_limits<int64_t>::min();
  for (int r = 0; r < block.num_rows; ++r) {
    const int64_t qpos = p.QueryPosition(block.batch, block.query[r]);
    q_min = std::min(q_min, qpos);
    q_max = std::max(q_max, qpos);
  }
  if (!eligible || q_min < 0) {
    ProcessTilesSimd(p, block, states);
    return;
  }
  // Every row may see key position kpos iff lo <= kpos < hi (KeyAllowed for all rows: the
  // causal rule binds the smallest query position, the window rule the largest).
  const int64_t lo = p.window > 0 ? std::max<int64_t>(0, q_max - p.window + 1) : 0;
  const int64_t hi = p.causal ? q_min + 1 : std::numeric_limits<int64_t>::max();
  const int64_t begin = block.key_begin, end = block.key_end;
  if (p.kv_positions == nullptr) {  // kpos = j: one dense run between two general ones
    const int64_t from = std::clamp(lo, begin, end);
    const int64_t to = std::clamp(hi, from, end);
    ProcessRange(p, block, begin, from, false, states);
    ProcessRange(p, block, from, to, true, states);
    ProcessRange(p, block, to, end, false, states);
    return;
  }
  // Explicit positions (caches: rings wrap, empty slots are -1): classify tiles of kFlashTile
  // keys by their smallest and largest position (and, with a mask, its values).
  const int64_t* positions = p.kv_positions + block.batch * p.shape.kv_len;
  ProcessTileRuns(p, block, begin, end, states, [&](int64_t first, int64_t last) {
    int64_t k_min = positions[first], k_max = positions[first];
    for (int64_t j = first + 1; j < last; ++j) {
      k_min = std::min(k_min, positions[j]);
      k_max = std::max(k_max, positions[j]);
    }
    return k_min >= lo && k_max < hi &&
           (p.mask == nullptr || HWY_DYNAMIC_DISPATCH(MaskFiniteImpl)(p, block, first, last));
  });
}

}  // namespace kvcheck::flash_internal
#endif  // HWY_ONCE
