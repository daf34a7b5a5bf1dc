// Typed tests over every registered strategy (src/cache/registry.cc) and every dtype: the
// basic contract of kv_cache.h, independent of the reference model.
#include "src/cache/registry.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/tensor/view_ops.h"
#include "testing/status_matchers.h"

namespace kvcheck {
namespace {

using ::kvcheck::testing::StatusIs;
using ::testing::Combine;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::ValuesIn;

// (B, KH, S, D) with element value = 1000 * first_position + ... so tokens are recognisable.
Tensor Tokens(DType dtype, int64_t batch, int64_t heads, int64_t seq, int64_t dim,
              int64_t first_position) {
  std::vector<float> values;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t s = 0; s < seq; ++s)
        for (int64_t d = 0; d < dim; ++d)
          values.push_back(static_cast<float>((first_position + s) * 4 + d % 4) +
                           0.5f * static_cast<float>(b + h));
  return *Tensor::FromFloats(dtype, {batch, heads, seq, dim}, values);
}

// Value of K at (b, h, position, d) as written by Tokens().
float Expected(int64_t b, int64_t h, int64_t position, int64_t d, DType dtype) {
  return RoundToDType(static_cast<float>(position * 4 + d % 4) + 0.5f * (b + h), dtype);
}

class CacheContractTest
    : public ::testing::TestWithParam<std::tuple<const CacheStrategy*, DType>> {
 protected:
  const CacheStrategy& strategy() const { return *std::get<0>(GetParam()); }
  DType dtype() const { return std::get<1>(GetParam()); }
  std::unique_ptr<KvCache> Make() const {
    absl::StatusOr<std::unique_ptr<KvCache>> cache = strategy().create(strategy().default_config);
    EXPECT_OK(cache);
    return *std::move(cache);
  }
  int64_t Visible(int64_t appended) const {
    return strategy().windowed ? std::min(appended, strategy().default_config.window) : appended;
  }
  // Batch row b's slots hold exactly the visible positions of `appended` tokens, in any order.
  void ExpectVisiblePositions(const CacheView& view, int64_t b, int64_t appended) const {
    std::vector<int64_t> seen;
    for (int64_t j = 0; j < view.length(); ++j) seen.push_back(view.position(b, j));
    std::sort(seen.begin(), seen.end());
    std::vector<int64_t> expected(Visible(appended));
    std::iota(expected.begin(), expected.end(), appended - Visible(appended));
    EXPECT_EQ(seen, expected);
  }
  // Every slot shows the token its position says, for every batch row and head.
  void ExpectConsistent(const CacheView& view, int64_t appended) const {
    ASSERT_EQ(view.length(), Visible(appended));
    ExpectVisiblePositions(view, 0, appended);
    for (int64_t b = 0; b < view.k.dim(0); ++b)
      for (int64_t h = 0; h < view.k.dim(1); ++h)
        for (int64_t j = 0; j < view.length(); ++j) {
          const int64_t p = view.position(b, j);
          EXPECT_EQ(view.k.GetFloat({b, h, j, 1}), Expected(b, h, p, 1, dtype()));
          EXPECT_EQ(view.v.GetFloat({b, h, j, 2}), Expected(b, h, p, 2, dtype()));
        }
  }
};

TEST_P(CacheContractTest, AppendsShowTheVisibleTokensWithTheirPositions) {
  std::unique_ptr<KvCache> cache = Make();
  int64_t appended = 0;
  for (int64_t seq : {3, 1, 1, 10, 0, 2}) {
    const Tensor k = Tokens(dtype(), 2, 3, seq, 5, appended);
    absl::StatusOr<CacheView> view = cache->Append(k, k);
    ASSERT_OK(view);
    appended += seq;
    EXPECT_EQ(cache->seq_len(), appended);
    ExpectConsistent(*view, appended);
  }
}

TEST_P(CacheContractTest, AcceptsTransposedAndNarrowedInputs) {
  std::unique_ptr<KvCache> cache = Make();
  // (B, S, KH, D) transposed to (B, KH, S, D): non-contiguous for S > 1.
  const Tensor bshd = *Transpose(Tokens(dtype(), 1, 3, 4, 6, 0), 1, 2);
  const Tensor transposed = *Transpose(bshd.DeepCopy(), 1, 2);
  ASSERT_FALSE(transposed.is_contiguous());
  ASSERT_OK(cache->Append(transposed, transposed));
  // A narrowed view with padded strides.
  const Tensor wide = Tokens(dtype(), 1, 3, 2, 9, 4);
  const Tensor narrowed = *Narrow(wide, 3, 0, 6);
  absl::StatusOr<CacheView> view = cache->Append(narrowed, narrowed);
  ASSERT_OK(view);
  ExpectConsistent(*view, 6);
}

TEST_P(CacheContractTest, ForkIsIndependentInBothDirections) {
  std::unique_ptr<KvCache> cache = Make();
  ASSERT_OK(cache->Append(Tokens(dtype(), 1, 2, 3, 4, 0), Tokens(dtype(), 1, 2, 3, 4, 0)));
  const CacheView before = *cache->View();
  const std::vector<uint32_t> before_bits = before.k.ToBits();
  std::unique_ptr<KvCache> fork = cache->Fork();
  // Different tokens at the same positions on the two branches.
  const Tensor a = Tokens(dtype(), 1, 2, 1, 4, 3);
  const Tensor b = Tokens(dtype(), 1, 2, 1, 4, 50);
  ASSERT_OK(fork->Append(b, b));
  ASSERT_OK(cache->Append(a, a));
  ExpectConsistent(*cache->View(), 4);
  EXPECT_EQ(before.k.ToBits(), before_bits);  // the pre-fork view did not change
  EXPECT_EQ(fork->View()->k.GetFloat({0, 1, 3, 1}), Expected(0, 1, 50, 1, dtype()));
}

TEST_P(CacheContractTest, ResetForgetsEverythingAndAllowsANewShape) {
  std::unique_ptr<KvCache> cache = Make();
  ASSERT_OK(cache->Append(Tokens(dtype(), 2, 2, 5, 4, 0), Tokens(dtype(), 2, 2, 5, 4, 0)));
  cache->Reset();
  EXPECT_EQ(cache->seq_len(), 0);
  EXPECT_FALSE(cache->shape().has_value());
  const Tensor k = Tokens(dtype(), 1, 3, 2, 7, 0);
  absl::StatusOr<CacheView> view = cache->Append(k, k);
  ASSERT_OK(view);
  ExpectConsistent(*view, 2);
}

TEST_P(CacheContractTest, BadAppendsFailWithTheirCodeAndChangeNothing) {
  std::unique_ptr<KvCache> cache = Make();
  const Tensor k = Tokens(dtype(), 2, 2, 3, 4, 0);
  ASSERT_OK(cache->Append(k, k));
  const std::vector<uint32_t> bits = cache->View()->k.ToBits();
  const DType other = dtype() == DType::kF32 ? DType::kF16 : DType::kF32;
  EXPECT_THAT(cache->Append(Tokens(other, 2, 2, 1, 4, 3), Tokens(other, 2, 2, 1, 4, 3)),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr(strategy().name)));
  EXPECT_THAT(cache->Append(Tokens(dtype(), 2, 3, 1, 4, 3), Tokens(dtype(), 2, 3, 1, 4, 3)),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(cache->Append(Tokens(dtype(), 2, 2, 1, 4, 3), Tokens(dtype(), 2, 2, 2, 4, 3)),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(cache->Append(Tokens(dtype(), 2, 0, 1, 4, 3), Tokens(dtype(), 2, 0, 1, 4, 3)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("zero-size")));
  // A zero-stride view with an enormous sequence length.
  const int64_t huge = kMaxSequenceLength;
  const Tensor broadcast =
      *Tensor::View(k.storage(), *Layout::Strided({2, 2, huge, 4}, {0, 0, 0, 1}, 0));
  EXPECT_THAT(cache->Append(broadcast, broadcast), StatusIs(absl::StatusCode::kOutOfRange));
  const bool active[] = {true, false};
  if (!strategy().per_row) {
    EXPECT_THAT(cache->AppendActive(Tokens(dtype(), 2, 2, 1, 4, 3), Tokens(dtype(), 2, 2, 1, 4, 3),
                                    active),
                StatusIs(absl::StatusCode::kUnimplemented));
  }
  EXPECT_EQ(cache->seq_len(), 3);
  EXPECT_EQ(cache->View()->k.ToBits(), bits);
}

// A zero-stride view may have more elements per token than any machine could allocate: B x KH
// x D of 2^61 elements (2^64 bytes per token of K and V in f32, past int64_t). The cache
// refuses it for its storage, and keeps its state; it must not compute the size unchecked.
TEST_P(CacheContractTest, ATokenTooLargeForAnyBufferIsRefusedForItsStorage) {
  const Tensor token = Tokens(dtype(), 1, 1, 1, 1, 7);
  for (const int64_t before : {int64_t{0}, int64_t{2}}) {
    SCOPED_TRACE(before == 0 ? "the first append" : "after 2 tokens");
    std::unique_ptr<KvCache> cache = Make();
    if (before > 0) {
      const Tensor k = Tokens(dtype(), 2, 2, before, 4, 0);
      ASSERT_OK(cache->Append(k, k));
    }
    for (const std::vector<int64_t>& shape :
         {std::vector<int64_t>{int64_t{1} << 20, int64_t{1} << 20, 1, int64_t{1} << 21},
          std::vector<int64_t>{int64_t{1} << 20, 1, 1, int64_t{1} << 40}}) {
      const Tensor wide =
          *Tensor::View(token.storage(), *Layout::Strided(shape, {0, 0, 0, 0}, 0));
      const absl::StatusOr<CacheView> view = cache->Append(wide, wide);
      // After the first append the shape is fixed, and any other is a precondition error.
      EXPECT_THAT(view, StatusIs(before == 0 ? absl::StatusCode::kResourceExhausted
                                             : absl::StatusCode::kFailedPrecondition));
      EXPECT_EQ(cache->seq_len(), before);
    }
  }
}

// The length limit admits an append that ends exactly at kMaxSequenceLength tokens, as the
// first append (checked before the shape is fixed) and as a later one (the step's own check).
// A zero-stride view gives the length without the memory. A window strategy keeps the last W
// tokens, takes it and then refuses one token more; the others cannot hold 2^40 slots and
// refuse it for their storage budget (kResourceExhausted), not for its length.
TEST_P(CacheContractTest, AnAppendEndingAtTheLengthLimitIsRefusedOnlyForItsStorage) {
  const Tensor token = Tokens(dtype(), 1, 1, 1, 4, 7);
  for (const int64_t before : {int64_t{0}, int64_t{3}}) {
    SCOPED_TRACE(before == 0 ? "the first append" : "after 3 tokens");
    std::unique_ptr<KvCache> cache = Make();
    if (before > 0) {
      const Tensor k = Tokens(dtype(), 2, 2, before, 4, 0);
      ASSERT_OK(cache->Append(k, k));
    }
    const Tensor broadcast = *Tensor::View(
        token.storage(), *Layout::Strided({2, 2, kMaxSequenceLength - before, 4}, {0, 0, 0, 1}, 0));
    absl::StatusOr<CacheView> view = cache->Append(broadcast, broadcast);
    if (!strategy().windowed) {
      EXPECT_THAT(view, StatusIs(absl::StatusCode::kResourceExhausted));
      EXPECT_EQ(cache->seq_len(), before);
      continue;
    }
    ASSERT_OK(view);
    EXPECT_EQ(cache->seq_len(), kMaxSequenceLength);
    const int64_t window = strategy().default_config.window;
    ASSERT_EQ(view->length(), window);
    for (int64_t b = 0; b < 2; ++b) {
      ExpectVisiblePositions(*view, b, kMaxSequenceLength);
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t j = 0; j < window; ++j)
          for (int64_t d = 0; d < 4; ++d) {
            EXPECT_EQ(view->k.GetFloat({b, h, j, d}), Expected(0, 0, 7, d, dtype()));
            EXPECT_EQ(view->v.GetFloat({b, h, j, d}), Expected(0, 0, 7, d, dtype()));
          }
    }
    const Tensor next = Tokens(dtype(), 2, 2, 1, 4, 9);
    EXPECT_THAT(cache->Append(next, next), StatusIs(absl::StatusCode::kOutOfRange));
    EXPECT_EQ(cache->seq_len(), kMaxSequenceLength);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Registry, CacheContractTest,
    Combine(ValuesIn([] {
              std::vector<const CacheStrategy*> all;
              for (const CacheStrategy& s : CacheStrategies()) all.push_back(&s);
              return all;
            }()),
            ValuesIn(kAllDTypes)),
    [](const auto& info) {
      return std::string(std::get<0>(info.param)->name) + "_" +
             DTypeName(std::get<1>(info.param));
    });

// Create refuses what a config cannot mean, naming the field: a negative byte budget (0 is
// the storage limit, not a negative one); for a window strategy a window outside
// [1, kMaxSequenceLength]; for a preallocating one an initial capacity outside
// [0, kMaxSequenceLength]. The limits themselves are accepted (nothing is allocated yet).
TEST_P(CacheContractTest, CreateRefusesConfigsOutsideTheirRange) {
  CacheConfig config = strategy().default_config;
  config.max_bytes = -1;
  EXPECT_THAT(strategy().create(config),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_bytes")));
  // Each value of `refused` in `field` is refused naming `named`; kMaxSequenceLength is taken.
  const auto expect_range = [&](int64_t CacheConfig::*field,
                                std::initializer_list<int64_t> refused, const char* named) {
    for (const int64_t value : refused) {
      config = strategy().default_config;
      config.*field = value;
      EXPECT_THAT(strategy().create(config),
                  StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(named)))
          << named << " " << value;
    }
    config = strategy().default_config;
    config.*field = kMaxSequenceLength;
    EXPECT_OK(strategy().create(config));
  };
  if (strategy().windowed) {
    expect_range(&CacheConfig::window, {0, -1, kMaxSequenceLength + 1}, "window");
  }
  const std::string name = strategy().name;
  if (name == "prealloc" || name == "interleaved") {
    expect_range(&CacheConfig::initial_capacity, {-1, kMaxSequenceLength + 1},
                 "initial capacity");
  }
}

TEST(Registry, FindsStrategiesByName) {
  ASSERT_NE(FindCacheStrategy("ring"), nullptr);
  EXPECT_STREQ(FindCacheStrategy("ring")->name, "ring");
  EXPECT_EQ(FindCacheStrategy("no-such-cache"), nullptr);
  EXPECT_THAT(FindCacheStrategy("ring")->create(CacheConfig{0, 0}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("window")));
}

}  // namespace
}  // namespace kvcheck
