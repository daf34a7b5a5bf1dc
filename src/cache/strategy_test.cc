// Named tests of the individual strategies: candle 0.11's KvCache worked example, the ring's
// golden sequence, the interleaved layout and capacity 0, scattered rows, concat's threaded
// copy of its history.
#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/cache/concat_cache.h"
#include "src/cache/interleaved_cache.h"
#include "src/cache/prealloc_cache.h"
#include "src/cache/ring_cache.h"
#include "src/cache/scattered_cache.h"
#include "src/tensor/view_ops.h"
#include "testing/status_matchers.h"

namespace kvcheck {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

std::unique_ptr<KvCache> Make(absl::StatusOr<std::unique_ptr<KvCache>> made) {
  EXPECT_OK(made);
  return *std::move(made);
}

// A (1, 1, n, 1) tensor holding `values`.
Tensor Column(const std::vector<float>& values) {
  return *Tensor::FromFloats(DType::kF32, {1, 1, static_cast<int64_t>(values.size()), 1}, values);
}

// candle 0.11's worked example (KvCache::new(2, 4), appends of 3, 1, 1, 10 ones of shape
// (1, 3, n, 64)) with our prealloc semantics: the same returned shapes and contiguity, and
// geometric growth 4 -> 8 -> 16 where candle grows linearly by 4 (4 -> 8 -> 12 -> 16).
TEST(PreallocCache, CandleWorkedExample) {
  std::unique_ptr<KvCache> cache = Make(PreallocCache::Create({.initial_capacity = 4}));
  struct Step {
    int64_t append, returned;
    bool contiguous;
    int64_t capacity;
  };
  const Step steps[] = {{3, 3, false, 4}, {1, 4, true, 4}, {1, 5, false, 8}, {10, 15, false, 16}};
  for (const Step& step : steps) {
    const Tensor ones = *Tensor::Filled(DType::kF32, {1, 3, step.append, 64}, 1.0f);
    absl::StatusOr<CacheView> view = cache->Append(ones, ones);
    ASSERT_OK(view);
    EXPECT_THAT(view->k.shape(), ElementsAre(1, 3, step.returned, 64));
    EXPECT_EQ(view->k.is_contiguous(), step.contiguous) << "after " << step.returned;
    EXPECT_EQ(cache->capacity(), step.capacity);
  }
  // Growth copied the 4 and then the 5 existing rows (K and V): 2 * (4 + 5) * 3 * 64 floats.
  EXPECT_EQ(cache->counters().bytes_growth_copied, 2 * (4 + 5) * 3 * 64 * 4);
}

TEST(PreallocCache, CapacityZeroGrows) {
  std::unique_ptr<KvCache> cache = Make(PreallocCache::Create({.initial_capacity = 0}));
  for (int i = 0; i < 5; ++i) ASSERT_OK(cache->Append(Column({1.0f}), Column({2.0f})));
  EXPECT_EQ(cache->seq_len(), 5);
  EXPECT_EQ(cache->capacity(), 8);  // 1 -> 2 -> 4 -> 8
}

// The ring's golden sequence (window 6), the one candle's own test uses for its rotating
// cache, with our semantics for a chunk of S >= W: the last W tokens, placed by position.
TEST(RingCache, GoldenSequence) {
  std::unique_ptr<KvCache> cache = Make(RingCache::Create({.window = 6}));
  struct Step {
    std::vector<float> append, values;
    std::vector<int64_t> positions;
  };
  const std::vector<Step> steps = {
      {{1, 2, 3}, {1, 2, 3}, {0, 1, 2}},
      {{4}, {1, 2, 3, 4}, {0, 1, 2, 3}},
      {{0, 5, 6, 7}, {6, 7, 3, 4, 0, 5}, {6, 7, 2, 3, 4, 5}},
      {{8}, {6, 7, 8, 4, 0, 5}, {6, 7, 8, 3, 4, 5}},
      {{9, 10, 11}, {6, 7, 8, 9, 10, 11}, {6, 7, 8, 9, 10, 11}},
      {{12}, {12, 7, 8, 9, 10, 11}, {12, 7, 8, 9, 10, 11}},
      // Nine tokens at positions 13..21: the last six (16..21) land in slots 4, 5, 0, 1, 2, 3.
      {{100, 101, 102, 103, 104, 105, 106, 107, 108},
       {105, 106, 107, 108, 103, 104},
       {18, 19, 20, 21, 16, 17}},
      {{42}, {105, 106, 107, 108, 42, 104}, {18, 19, 20, 21, 22, 17}},
  };
  for (const Step& step : steps) {
    absl::StatusOr<CacheView> view = cache->Append(Column(step.append), Column(step.append));
    ASSERT_OK(view);
    EXPECT_THAT(view->k.ToFloats(), ElementsAreArray(step.values));
    std::vector<int64_t> positions;
    for (int64_t j = 0; j < view->length(); ++j) positions.push_back(view->position(0, j));
    EXPECT_THAT(positions, ElementsAreArray(step.positions));
    EXPECT_LE(view->length(), 6);  // never W + 1
  }
}

TEST(InterleavedCache, BufferIsPositionMajorWithKAndVInterleavedPerHead) {
  std::unique_ptr<KvCache> made = Make(InterleavedCache::Create({.initial_capacity = 0}));
  auto* cache = static_cast<InterleavedCache*>(made.get());
  // (B=1, KH=2, S=2, D=2): K value 10*h + s + 0.5*d, V value -(same).
  std::vector<float> k_values, v_values;
  for (int h = 0; h < 2; ++h)
    for (int s = 0; s < 2; ++s)
      for (int d = 0; d < 2; ++d) {
        k_values.push_back(10.0f * h + s + 0.5f * d);
        v_values.push_back(-(10.0f * h + s + 0.5f * d));
      }
  const Tensor k = *Tensor::FromFloats(DType::kF32, {1, 2, 2, 2}, k_values);
  const Tensor v = *Tensor::FromFloats(DType::kF32, {1, 2, 2, 2}, v_values);
  absl::StatusOr<CacheView> view = cache->Append(k, v);
  ASSERT_OK(view);
  EXPECT_EQ(view->k.ToFloats(), k_values);
  EXPECT_EQ(view->v.ToFloats(), v_values);
  // [pos][head][K(D) | V(D)]
  EXPECT_THAT(cache->InterleavedView().ToFloats(),
              ElementsAre(0, 0.5, -0, -0.5, 10, 10.5, -10, -10.5,    // position 0
                          1, 1.5, -1, -1.5, 11, 11.5, -11, -11.5));  // position 1
  EXPECT_TRUE(view->k.SharesStorageWith(view->v));
}

TEST(ScatteredCache, InactiveRowsNeitherWriteNorAdvance) {
  std::unique_ptr<KvCache> cache = Make(ScatteredCache::Create({.window = 3}));
  const Tensor two_rows = *Tensor::FromFloats(DType::kF32, {2, 1, 2, 1}, {1, 2, 7, 8});
  const bool first_only[] = {true, false};
  absl::StatusOr<CacheView> view = cache->AppendActive(two_rows, two_rows, first_only);
  ASSERT_OK(view);
  EXPECT_EQ(cache->row_seq_len(0), 2);
  EXPECT_EQ(cache->row_seq_len(1), 0);
  EXPECT_THAT(view->positions, ElementsAre(0, 1, -1, -1));
  const bool both[] = {true, true};
  const Tensor next = *Tensor::FromFloats(DType::kF32, {2, 1, 2, 1}, {3, 4, 9, 10});
  view = cache->AppendActive(next, next, both);
  ASSERT_OK(view);
  // Row 0 wrapped (positions 1, 2, 3 in slots 1, 2, 0); row 1 holds positions 0, 1.
  EXPECT_THAT(view->positions, ElementsAre(3, 1, 2, 0, 1, -1));
  EXPECT_EQ(view->k.GetFloat({0, 0, 0, 0}), 4.0f);
  EXPECT_EQ(view->k.GetFloat({1, 0, 1, 0}), 10.0f);
}

// With num_threads > 1 concat copies a history of 128 KiB or more a (batch, KV head) per task
// (CatSeqThreaded): every view is bit for bit the one-thread cache's, on every dtype, from
// transposed (strided) inputs of several lengths, across the threshold; and a thread count
// outside [1, 256] is refused.
TEST(ConcatCache, ThreadedCopyOfTheHistoryKeepsEveryBit) {
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (int threads : {2, 3}) {
      SCOPED_TRACE(std::string(DTypeName(dtype)) + " threads " + std::to_string(threads));
      std::unique_ptr<KvCache> one = Make(ConcatCache::Create({}));
      std::unique_ptr<KvCache> many = Make(ConcatCache::Create({.num_threads = threads}));
      constexpr int64_t B = 2, KH = 4, D = 64;  // f32 history passes 128 KiB at 64 tokens
      int64_t step = 0, length = 0;
      while (length < 300) {
        const int64_t S = 1 + (step * 7) % 13;
        std::vector<float> k_values(B * S * KH * D), v_values(B * S * KH * D);
        for (size_t i = 0; i < k_values.size(); ++i) {
          k_values[i] = static_cast<float>((i * 37 + step * 11) % 1001) * 0.125f - 60.0f;
          v_values[i] = static_cast<float>((i * 53 + step * 5) % 997) * -0.25f + 100.0f;
        }
        // (B, S, KH, D) seen as (B, KH, S, D): the decoder's transposed heads view.
        const Tensor k = *Transpose(*Tensor::FromFloats(dtype, {B, S, KH, D}, k_values), 1, 2);
        const Tensor v = *Transpose(*Tensor::FromFloats(dtype, {B, S, KH, D}, v_values), 1, 2);
        absl::StatusOr<CacheView> expected = one->Append(k, v);
        absl::StatusOr<CacheView> got = many->Append(k, v);
        ASSERT_OK(expected);
        ASSERT_OK(got);
        length += S;
        ASSERT_THAT(got->k.shape(), ElementsAre(B, KH, length, D));
        ASSERT_EQ(got->k.ToFloats(), expected->k.ToFloats()) << "length " << length;
        ASSERT_EQ(got->v.ToFloats(), expected->v.ToFloats()) << "length " << length;
        ++step;
      }
      EXPECT_EQ(many->counters().bytes_other_copied, one->counters().bytes_other_copied);
    }
  }
  for (int threads : {0, -1, 257}) {
    absl::StatusOr<std::unique_ptr<KvCache>> made = ConcatCache::Create({.num_threads = threads});
    ASSERT_FALSE(made.ok());
    EXPECT_EQ(made.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(made.status().message()), ::testing::HasSubstr("num_threads"));
  }
}

}  // namespace
}  // namespace kvcheck
