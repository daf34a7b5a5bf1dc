// File: flash_decode_scores-inl.h
// Highway code of the dense decode kernel (flash_decode_simd.cc), included once per target
// after hwy/foreach_target.h: reading K/V rows as f32 vectors, and the scores of a tile,
// s_t = <q_r * scale, k_t> for a group of up to four query rows sharing each K load.
//
// Each score is a dot product over D whose N lanes of partial sums must be added up. Summing
// each one horizontally (log2 N shuffle + add steps, a scalar store) costs more than its
// multiply-adds; instead the partial sums of N keys become one vector of N scores:
// - 128-bit blocks (SSE4, AVX2; N = 4, 8): a 4 x 4 transpose-and-add inside each block
//   (InterleaveLower / InterleaveUpper of 32-bit, then 64-bit lanes: 6 in-block shuffles and
//   3 adds per 4 keys), then for N = 8 one add of the two blocks. In-block shuffles are cheap
//   where lane-crossing ones (vpermq) are not.
// - AVX-512 (N = 16), keys four at a time: each accumulator's two 256-bit halves added
//   (an extract and a 256-bit add), then the 128-bit-block scheme above on the 8-lane sums,
//   and two 8-score halves joined. Against the earlier log2 N levels of pairwise sums over
//   whole vectors (ConcatEven + ConcatOdd + Add, 45 512-bit operations per 16 keys and row,
//   which Zen 4 executes as two 256-bit halves each) this is 75 256-bit operations; alternating
//   runs (Zen 4 VM, 2026-12-04, ab_pair.sh, six pairs): one hot (1, 4096) call 0.933x the
//   time, (4, 4096) 0.898x, faster in 5 and 6 of 6 pairs.
// - other wide vectors (N = 16 with too few registers for four keys, and wider): log2 N levels
//   of pairwise sums [a0 + a1, a2 + a3, ..., b0 + b1, ...] (ConcatEven + ConcatOdd + Add).
// Keys are taken four at a time when kRows x 4 accumulators, kRows q vectors and a K vector
// fit in the register file (12 + 3 + 1 of AVX2's 16 for GQA's three rows): 4 x kRows
// independent multiply-add chains cover the FMA latency (two keys' 2 x kRows do not), and each
// q load serves four keys. Otherwise (four rows on AVX2) two at a time.

// Per-target include guard (Highway's convention for -inl.h files).
#if defined(KVCHECK_SRC_ATTENTION_FLASH_DECODE_SCORES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVCHECK_SRC_ATTENTION_FLASH_DECODE_SCORES_INL_H_
#undef KVCHECK_SRC_ATTENTION_FLASH_DECODE_SCORES_INL_H_
#else
#define KVCHECK_SRC_ATTENTION_FLASH_DECODE_SCORES_INL_H_
#endif

#include <algorithm>
#include <cstdint>
#include <limits>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "src/attention/flash_problem.h"
#include "src/attention/flash_score_rules-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvcheck::flash_internal {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// The most keys per tile, and the row stride of the scores buffer. A tile is one pass over
// its K rows (the scores), one online-softmax update, then one pass over its V rows. Long
// tiles measured faster on a Zen 4 VM (AVX-512, 9 heads over 3 KV heads, D = 64, one core,
// 2026-12-04): one hot (1, 4096) call took 0.141-0.194 ms with 32 keys per tile and
// 0.122-0.146 with 1024 or 4096 (the per-tile costs: the softmax update's reductions and
// branch, the accumulators' loads and stores; 1024 against 4096 hot: even, ab_pair.sh, six
// pairs). Over 30 layers from memory, in each paired run (BM_DecodePairedLayers: decode and
// a streaming pass over the same bytes, alternating) the decode read at 43-80% of the pass
// with 32 keys per tile, 70-85% with 1024 and 76-87% with 4096: the K and V streams take
// turns once per tile, and each turn costs the other stream's prefetch ramp. TileKeys picks
// a call's tile.
constexpr int64_t kTile = kMaxDecodeTile;
// Lanes per vector; a power of two on every fixed-width target (the reduction tree needs it).
constexpr int64_t kN = static_cast<int64_t>(hn::MaxLanes(DF()));
static_assert(kTile % kN == 0 || kN > kTile, "a tile is a whole number of vectors");

// Vector registers of the target: 32 with AVX-512, 16 otherwise.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
constexpr int kVectorRegisters = 32;
#else
constexpr int kVectorRegisters = 16;
#endif

HWY_INLINE VF LoadF32(DF df, const float* p) { return hn::LoadU(df, p); }
HWY_INLINE VF LoadF32(DF df, const hwy::float16_t* p) {
  const hn::Rebind<hwy::float16_t, DF> dh;
  return hn::PromoteTo(df, hn::LoadU(dh, p));
}
// bf16 is the top half of an f32: widening is a shift, exact on every target.
HWY_INLINE VF LoadF32(DF df, const hwy::bfloat16_t* p) {
  const hn::Rebind<hwy::bfloat16_t, DF> dh;
  return hn::PromoteTo(df, hn::LoadU(dh, p));
}

// K or V rows of a tile: key t's row starts `stride` elements after key t - 1's; or, for a
// tile taken from 2^segment_shift segments of the block's keys (DenseTiles), key t is row
// t >> segment_shift of segment t mod 2^segment_shift, the segments segment_stride elements
// apart, so that consecutive keys come from different segments.
template <typename T>
struct Rows {
  const T* first;
  int64_t stride;
  int64_t segment_stride = 0;
  int segment_shift = 0;
  // Elements from key 0's row to key t's.
  int64_t Offset(int64_t t) const {
    const int64_t segment = t & ((int64_t{1} << segment_shift) - 1);
    return segment * segment_stride + (t >> segment_shift) * stride;
  }
  const T* operator[](int64_t t) const { return first + Offset(t); }
  // The rows of keys t0 .. t0 + 3, t0 a multiple of four (see kMaxSegmentShift): a multiply
  // for the four instead of Offset's work for each; Offset(1..3) are the same for every quad
  // of a tile, and the compiler keeps them out of the loop. Zen 2 VM, three rows (ab_pair.sh,
  // four pairs): one cached (1, 4096) call 0.99x the time, 30 layers from memory 0.95x.
  void Quad(int64_t t0, const T* (&k)[4]) const {
    const T* base = first + (t0 >> 2) * Offset(4);
    k[0] = base, k[1] = base + Offset(1), k[2] = base + Offset(2), k[3] = base + Offset(3);
  }
};

// Key t + i's row is the row of key t (t a multiple of four) plus Offset(i) for i < 4, and
// key t + 4's is key t's plus Offset(4), where a tile has at most four segments: loops that
// take four keys at a time step one pointer instead of computing each key's row (a shift,
// a mask and two multiplies, which in the value pass outnumbered its multiply-adds' loads).
constexpr int kMaxSegmentShift = 2;

// Requests the cache lines of `bytes` from `row` into L1.
HWY_INLINE void PrefetchRow(const void* row, int64_t bytes) {
  const char* p = static_cast<const char*>(row);
  for (int64_t offset = 0; offset < bytes; offset += 64) hwy::Prefetch(p + offset);
}

// v, through a register: GCC otherwise folds a load used by several multiply-adds into each
// of them as a memory operand, loading it again each time (a q vector serves every key of a
// pass, a V vector every row of a group), and the loads then outnumber the multiply-adds.
HWY_INLINE VF InRegister(VF v) {
#if HWY_ARCH_X86 && HWY_TARGET != HWY_EMU128 && HWY_TARGET != HWY_SCALAR && \
    (HWY_COMPILER_GCC || HWY_COMPILER_CLANG)
#if HWY_TARGET <= HWY_AVX3
  asm("" : "+v"(v.raw));
#else
  asm("" : "+x"(v.raw));
#endif
#endif
  return v;
}

// Keys k0 and k1 against rows [0, kRows) of q (row r at q + r * loop_dim): the lanes of a[r]
// sum to <q_r, k0>, those of b[r] to <q_r, k1>.
template <int kRows, typename T>
HWY_INLINE void DotPair(DF df, const float* q, int64_t loop_dim, const T* k0, const T* k1, VF* a,
                        VF* b) {
  // Named accumulators (not arrays) so that they stay in registers.
  VF a0 = hn::Zero(df), a1 = a0, a2 = a0, a3 = a0;
  VF b0 = a0, b1 = a0, b2 = a0, b3 = a0;
  for (int64_t d = 0; d < loop_dim; d += kN) {
    const VF x = LoadF32(df, k0 + d), y = LoadF32(df, k1 + d);
    const VF q0 = InRegister(hn::LoadU(df, q + d));
    a0 = hn::MulAdd(q0, x, a0);
    b0 = hn::MulAdd(q0, y, b0);
    if constexpr (kRows > 1) {
      const VF q1 = InRegister(hn::LoadU(df, q + loop_dim + d));
      a1 = hn::MulAdd(q1, x, a1);
      b1 = hn::MulAdd(q1, y, b1);
    }
    if constexpr (kRows > 2) {
      const VF q2 = InRegister(hn::LoadU(df, q + 2 * loop_dim + d));
      a2 = hn::MulAdd(q2, x, a2);
      b2 = hn::MulAdd(q2, y, b2);
    }
    if constexpr (kRows > 3) {
      const VF q3 = InRegister(hn::LoadU(df, q + 3 * loop_dim + d));
      a3 = hn::MulAdd(q3, x, a3);
      b3 = hn::MulAdd(q3, y, b3);
    }
  }
  a[0] = a0, b[0] = b0;
  if constexpr (kRows > 1) a[1] = a1, b[1] = b1;
  if constexpr (kRows > 2) a[2] = a2, b[2] = b2;
  if constexpr (kRows > 3) a[3] = a3, b[3] = b3;
}

// Four keys per pass over D when their kRows x 4 accumulators, the kRows q vectors and one K
// vector fit in registers: twice the independent multiply-add chains of a pair (a pair's
// 2 x kRows chains leave the FMA units idle through their latency), and each q load serves
// four keys.
template <int kRows>
constexpr bool kFourKeys = 5 * kRows + 1 <= kVectorRegisters;

// Keys k[0..3] against rows [0, kRows) of q: the lanes of acc[i][r] sum to <q_r, k_i>.
template <int kRows, typename T>
HWY_INLINE void DotFour(DF df, const float* q, int64_t loop_dim, const T* const* k,
                        VF (&acc)[4][kRows]) {
  HWY_UNROLL(4)
  for (int i = 0; i < 4; ++i) {
    HWY_UNROLL(4)
    for (int r = 0; r < kRows; ++r) acc[i][r] = hn::Zero(df);
  }
  for (int64_t d = 0; d < loop_dim; d += kN) {
    VF qv[kRows];
    HWY_UNROLL(4)
    for (int r = 0; r < kRows; ++r) qv[r] = InRegister(hn::LoadU(df, q + r * loop_dim + d));
    HWY_UNROLL(4)
    for (int i = 0; i < 4; ++i) {
      const VF x = InRegister(LoadF32(df, k[i] + d));
      HWY_UNROLL(4)
      for (int r = 0; r < kRows; ++r) acc[i][r] = hn::MulAdd(qv[r], x, acc[i][r]);
    }
  }
}

// The lane sums of N accumulators (one per key) as one vector of N scores. Two ways, by width:
// - 128-bit blocks (N = 4, 8): a 4 x 4 transpose-and-add inside each block (InterleaveLower /
//   Upper of 32- then 64-bit lanes: 6 in-block shuffles per 4 keys), then one add of the two
//   blocks for N = 8. Per-block shuffles are cheap where lane-crossing ones are not (AVX2).
// - wider (N = 16): log2 N levels of pairwise sums [a0 + a1, a2 + a3, ..., b0 + b1, ...]
//   (ConcatEven + ConcatOdd + Add, one two-table permute each with AVX-512).
HWY_INLINE VF PairSums(DF df, VF a, VF b) {
#if HWY_TARGET == HWY_SCALAR
  (void)df;
  return hn::Add(a, b);  // not called: one lane needs no tree
#else
  return hn::Add(hn::ConcatEven(df, b, a), hn::ConcatOdd(df, b, a));
#endif
}

#if HWY_TARGET != HWY_SCALAR  // one lane: no reduction tree (ScoreTile's per-key sums)

// The 128-bit-block reduction, for any vector width D (whole vectors, or AVX-512's 256-bit
// halves):
// [a0 + a2, b0 + b2, a1 + a3, b1 + b3] in each 128-bit block.
template <class D>
HWY_INLINE hn::Vec<D> InterleavedSums(D d, hn::Vec<D> a, hn::Vec<D> b) {
  return hn::Add(hn::InterleaveLower(d, a, b), hn::InterleaveUpper(d, a, b));
}

// From ab = InterleavedSums(a, b) and cd = InterleavedSums(c, d): lane i of each 128-bit block
// holds that block's sum of the i-th of a, b, c, d.
template <class D>
HWY_INLINE hn::Vec<D> QuadSums(D d, hn::Vec<D> ab, hn::Vec<D> cd) {
  const hn::Repartition<double, D> dd;
  const auto x = hn::BitCast(dd, ab), y = hn::BitCast(dd, cd);
  return hn::Add(hn::BitCast(d, hn::InterleaveLower(dd, x, y)),
                 hn::BitCast(d, hn::InterleaveUpper(dd, x, y)));
}

// Two blocks' QuadSums of keys [t0, t0 + 4) (lo) and [t0 + 4, t0 + 8) (hi), 8 lanes: lane i
// is the sum for key t0 + i.
template <class D>
HWY_INLINE hn::Vec<D> EightSums(D d, hn::Vec<D> lo, hn::Vec<D> hi) {
  return hn::Add(hn::ConcatLowerLower(d, hi, lo), hn::ConcatUpperUpper(d, hi, lo));
}

// Keys [t0, t0 + 4): lane i of each 128-bit block of out[r] holds that block's part of
// <q_r, k_{t0 + i}>.
template <int kRows, typename T>
HWY_INLINE void DotQuad(DF df, const float* q, int64_t loop_dim, const Rows<T>& keys, int64_t t0,
                        VF* out) {
  VF ab[kRows], cd[kRows];
  if constexpr (kFourKeys<kRows>) {
    const T* k[4];
    keys.Quad(t0, k);
    VF acc[4][kRows];
    DotFour<kRows>(df, q, loop_dim, k, acc);
    HWY_UNROLL(4)
    for (int r = 0; r < kRows; ++r) {
      ab[r] = InterleavedSums(df, acc[0][r], acc[1][r]);
      cd[r] = InterleavedSums(df, acc[2][r], acc[3][r]);
    }
  } else {
    VF a[kRows], b[kRows];
    DotPair<kRows>(df, q, loop_dim, keys[t0], keys[t0 + 1], a, b);
    HWY_UNROLL(4)
    for (int r = 0; r < kRows; ++r) ab[r] = InterleavedSums(df, a[r], b[r]);
    DotPair<kRows>(df, q, loop_dim, keys[t0 + 2], keys[t0 + 3], a, b);
    HWY_UNROLL(4)
    for (int r = 0; r < kRows; ++r) cd[r] = InterleavedSums(df, a[r], b[r]);
  }
  HWY_UNROLL(4)
  for (int r = 0; r < kRows; ++r) out[r] = QuadSums(df, ab[r], cd[r]);
}

// Keys [t0, t0 + kKeys) for the pairwise tree: lane group i of out[r] (N / kKeys lanes) sums
// to <q_r, k_{t0 + i}>; with kKeys = N, lane i is that score.
template <int kRows, int64_t kKeys, typename T>
HWY_INLINE void DotKeys(DF df, const float* q, int64_t loop_dim, const Rows<T>& keys, int64_t t0,
                        VF* out) {
  VF lo[kRows], hi[kRows];
  if constexpr (kKeys == 2) {
    DotPair<kRows>(df, q, loop_dim, keys[t0], keys[t0 + 1], lo, hi);
  } else if constexpr (kKeys == 4 && kFourKeys<kRows>) {
    const T* k[4];
    keys.Quad(t0, k);
    VF acc[4][kRows];
    DotFour<kRows>(df, q, loop_dim, k, acc);
    HWY_UNROLL(4)
    for (int r = 0; r < kRows; ++r) {
      lo[r] = PairSums(df, acc[0][r], acc[1][r]);
      hi[r] = PairSums(df, acc[2][r], acc[3][r]);
    }
  } else {
    DotKeys<kRows, kKeys / 2>(df, q, loop_dim, keys, t0, lo);
    DotKeys<kRows, kKeys / 2>(df, q, loop_dim, keys, t0 + kKeys / 2, hi);
  }
  HWY_UNROLL(4)
  for (int r = 0; r < kRows; ++r) out[r] = PairSums(df, lo[r], hi[r]);
}

// Keys [t0, t0 + 4) for 16-lane vectors, in 256-bit halves: each accumulator's halves
// added (one extract and one 256-bit add), then DotQuad's in-block transpose-and-add
// (InterleavedSums, QuadSums) on the 8-lane sums: lane i of each 128-bit block of out[r]
// holds that block's part of <q_r, k_{t0 + i}>.
template <int kRows, typename T, class DH>
HWY_INLINE void DotQuadHalves(DF df, DH dh, const float* q, int64_t loop_dim, const Rows<T>& keys,
                              int64_t t0, hn::Vec<DH>* out) {
  using VH = hn::Vec<DH>;
  const T* k[4];
  keys.Quad(t0, k);
  VF acc[4][kRows];
  DotFour<kRows>(df, q, loop_dim, k, acc);
  HWY_UNROLL(4)
  for (int r = 0; r < kRows; ++r) {
    VH h[4];
    HWY_UNROLL(4)
    for (int i = 0; i < 4; ++i) {
      h[i] = hn::Add(hn::LowerHalf(dh, acc[i][r]), hn::UpperHalf(dh, acc[i][r]));
    }
    out[r] = QuadSums(dh, InterleavedSums(dh, h[0], h[1]), InterleavedSums(dh, h[2], h[3]));
  }
}

// Keys [t0, t0 + 8) for 16-lane vectors: lane i of out[r] (8 lanes) is <q_r, k_{t0 + i}>.
template <int kRows, typename T, class DH>
HWY_INLINE void DotEightHalves(DF df, DH dh, const float* q, int64_t loop_dim,
                               const Rows<T>& keys, int64_t t0, hn::Vec<DH>* out) {
  hn::Vec<DH> lo[kRows], hi[kRows];
  DotQuadHalves<kRows>(df, dh, q, loop_dim, keys, t0, lo);
  DotQuadHalves<kRows>(df, dh, q, loop_dim, keys, t0 + 4, hi);
  HWY_UNROLL(4)
  for (int r = 0; r < kRows; ++r) out[r] = EightSums(dh, lo[r], hi[r]);
}

// Scores of keys [t0, t0 + N) for rows [0, kRows): lane i of out[r] is <q_r, k_{t0 + i}>.
template <int kRows, typename T>
HWY_INLINE void DotVector(DF df, const float* q, int64_t loop_dim, const Rows<T>& keys, int64_t t0,
                          VF* out) {
  if constexpr (kN == 4) {
    DotQuad<kRows>(df, q, loop_dim, keys, t0, out);
  } else if constexpr (kN == 8) {
    VF lo[kRows], hi[kRows];
    DotQuad<kRows>(df, q, loop_dim, keys, t0, lo);
    DotQuad<kRows>(df, q, loop_dim, keys, t0 + 4, hi);
    HWY_UNROLL(4)
    for (int r = 0; r < kRows; ++r) out[r] = EightSums(df, lo[r], hi[r]);
  } else if constexpr (kN == 16 && kFourKeys<kRows>) {
    const hn::Half<DF> dh;
    hn::Vec<decltype(dh)> lo[kRows], hi[kRows];
    DotEightHalves<kRows>(df, dh, q, loop_dim, keys, t0, lo);
    DotEightHalves<kRows>(df, dh, q, loop_dim, keys, t0 + 8, hi);
    HWY_UNROLL(4)
    for (int r = 0; r < kRows; ++r) out[r] = hn::Combine(df, hi[r], lo[r]);
  } else {
    DotKeys<kRows, kN>(df, q, loop_dim, keys, t0, out);
  }
}

#endif  // HWY_TARGET != HWY_SCALAR

// scores[r * kTile + t] = <q_r, k_t> for t < count, -inf for count <= t < WholeVectors(count);
// requests the V rows of `prefetch` (if not null) N keys at a time as the scores reach them.
template <int kRows, typename T>
void ScoreTile(DF df, const float* q, int64_t loop_dim, const Rows<T>& keys, int64_t count,
               const Rows<T>* prefetch, int64_t prefetch_bytes, float* scores) {
  (void)prefetch, (void)prefetch_bytes;  // one lane (HWY_SCALAR): no prefetching
  int64_t t = 0;
#if HWY_TARGET != HWY_SCALAR
  if constexpr (kN >= 4 && kN <= kTile) {
    for (; t + kN <= count; t += kN) {
      if (prefetch != nullptr) {
        for (int64_t i = t; i < t + kN; ++i) PrefetchRow((*prefetch)[i], prefetch_bytes);
      }
      VF s[kRows];
      DotVector<kRows>(df, q, loop_dim, keys, t, s);
      HWY_UNROLL(4)
      for (int r = 0; r < kRows; ++r) hn::Store(s[r], df, scores + r * kTile + t);
    }
  }
#endif
  for (; t < count; ++t) {  // the last keys of a short tile, one horizontal sum each
    for (int r = 0; r < kRows; ++r) {
      VF a = hn::Zero(df);
      for (int64_t d = 0; d < loop_dim; d += kN) {
        a = hn::MulAdd(hn::LoadU(df, q + r * loop_dim + d), LoadF32(df, keys[t] + d), a);
      }
      scores[r * kTile + t] = hn::GetLane(hn::SumOfLanes(df, a));
    }
  }
  for (int r = 0; r < kRows; ++r) {
    std::fill(scores + r * kTile + count, scores + r * kTile + WholeVectors(df, count),
              -std::numeric_limits<float>::infinity());
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kvcheck::flash_internal
HWY_AFTER_NAMESPACE();

#endif  // KVCHECK_SRC_ATTENTION_FLASH_DECODE_SCORES_INL_H_
