#include "reference/cache_model.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace kvcheck::reference {
namespace {

// (B, KH, S, D) bits where element value = base + s (so tokens are recognisable).
std::vector<uint32_t> Tokens(const CacheShape& shape, int64_t seq, uint32_t base) {
  std::vector<uint32_t> bits;
  for (int64_t b = 0; b < shape.batch; ++b)
    for (int64_t h = 0; h < shape.num_kv_heads; ++h)
      for (int64_t s = 0; s < seq; ++s)
        for (int64_t d = 0; d < shape.head_dim; ++d)
          bits.push_back(base + static_cast<uint32_t>(s) + 1000u * static_cast<uint32_t>(b));
  return bits;
}

std::vector<int64_t> Positions(const std::vector<ModelToken>& tokens) {
  std::vector<int64_t> positions;
  for (const ModelToken& t : tokens) positions.push_back(t.position);
  return positions;
}

TEST(CacheModel, FullCacheShowsEverythingSinceReset) {
  const CacheShape shape{1, 2, 3, DType::kF16};
  CacheModel model;
  model.Append(shape, 3, Tokens(shape, 3, 10), Tokens(shape, 3, 20));
  model.Append(shape, 2, Tokens(shape, 2, 30), Tokens(shape, 2, 40));
  EXPECT_EQ(model.appended(0), 5);
  const std::vector<ModelToken> visible = model.Visible(0);
  EXPECT_EQ(Positions(visible), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(visible[3].k[0], 30u);
  EXPECT_EQ(visible[4].v[5], 41u);
  model.Reset();
  EXPECT_FALSE(model.shape().has_value());
  EXPECT_EQ(model.appended(0), 0);
}

TEST(CacheModel, WindowShowsExactlyTheLastWTokens) {
  const CacheShape shape{1, 1, 1, DType::kF32};
  CacheModel model(/*window=*/4);
  model.Append(shape, 3, Tokens(shape, 3, 0), Tokens(shape, 3, 0));
  EXPECT_EQ(Positions(model.Visible(0)), (std::vector<int64_t>{0, 1, 2}));
  model.Append(shape, 1, Tokens(shape, 1, 3), Tokens(shape, 1, 3));
  EXPECT_EQ(Positions(model.Visible(0)), (std::vector<int64_t>{0, 1, 2, 3}));
  model.Append(shape, 6, Tokens(shape, 6, 4), Tokens(shape, 6, 4));  // S >= W
  EXPECT_EQ(Positions(model.Visible(0)), (std::vector<int64_t>{6, 7, 8, 9}));
  EXPECT_EQ(model.Visible(0)[0].k[0], 4u + 2u);
}

TEST(CacheModel, InactiveRowsNeitherWriteNorAdvanceAndForkIsIndependent) {
  const CacheShape shape{2, 1, 1, DType::kBF16};
  CacheModel model(/*window=*/0);
  model.Append(shape, 2, Tokens(shape, 2, 0), Tokens(shape, 2, 0), {true, false});
  EXPECT_EQ(model.appended(0), 2);
  EXPECT_EQ(model.appended(1), 0);
  CacheModel fork = model;
  fork.Append(shape, 1, Tokens(shape, 1, 7), Tokens(shape, 1, 7), {false, true});
  EXPECT_EQ(fork.appended(1), 1);
  EXPECT_EQ(fork.Visible(1)[0].k[0], 1007u);
  EXPECT_EQ(model.appended(1), 0);
}

}  // namespace
}  // namespace kvcheck::reference
