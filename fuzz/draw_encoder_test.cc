// DrawEncoder writes what InputDraws reads, checked against clang's own FuzzedDataProvider:
// random plans over ranges of every width decode to themselves, and the provider's typed
// calls the targets used before draws.h (ConsumeBool, ConsumeIntegral, PickValueInArray-like
// index draws) read the same bytes as Draws::Int over the same range.
#include "fuzz/draw_encoder.h"

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "fuzz/draws.h"
#include "fuzzer/FuzzedDataProvider.h"
#include "gtest/gtest.h"

namespace kvcheck::fuzz {
namespace {

struct Range {
  int64_t min, max;
};

// Ranges of 1 value (no byte) to the full int64 (8 bytes), signed and unsigned-looking.
std::vector<Range> Ranges() {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  return {{0, 0},     {5, 5},   {0, 1},        {0, 2},          {1, 2},        {0, 255},
          {0, 256},   {-3, 40}, {1, 65536},    {0, 0xffffffff}, {-(1LL << 40), 1LL << 40},
          {kMin, kMax}, {kMin, 0}, {0, kMax}, {kMin, kMin + 300}};
}

TEST(DrawEncoderTest, RandomPlansDecodeToThemselves) {
  std::mt19937_64 random(20261206);
  const std::vector<Range> ranges = Ranges();
  for (int round = 0; round < 2000; ++round) {
    std::vector<Range> draws;
    std::vector<int64_t> values;
    DrawPlan plan;
    const int count = 1 + static_cast<int>(random() % 12);
    for (int i = 0; i < count; ++i) {
      const Range r = ranges[random() % ranges.size()];
      const uint64_t span = static_cast<uint64_t>(r.max) - static_cast<uint64_t>(r.min);
      // Often the range's ends (the minimum is the value an exhausted input draws).
      const uint64_t offset = random() % 4 == 0   ? 0
                              : random() % 3 == 0 ? span
                              : span == std::numeric_limits<uint64_t>::max()
                                  ? random()
                                  : random() % (span + 1);
      draws.push_back(r);
      values.push_back(static_cast<int64_t>(static_cast<uint64_t>(r.min) + offset));
      plan["draw " + std::to_string(i)] = {values.back()};
    }
    DrawEncoder encoder(plan);
    for (int i = 0; i < count; ++i) {
      ASSERT_EQ(encoder.Int("draw " + std::to_string(i), draws[i].min, draws[i].max), values[i]);
    }
    ASSERT_TRUE(encoder.Errors().empty());
    const std::vector<uint8_t> bytes = encoder.Bytes();
    FuzzedDataProvider provider(bytes.data(), bytes.size());
    for (int i = 0; i < count; ++i) {
      ASSERT_EQ(provider.ConsumeIntegralInRange<int64_t>(draws[i].min, draws[i].max), values[i])
          << "round " << round << " draw " << i;
    }
    InputDraws input(bytes.data(), bytes.size());
    for (int i = 0; i < count; ++i) {
      ASSERT_EQ(input.Int("", draws[i].min, draws[i].max), values[i]);
    }
  }
}

TEST(DrawEncoderTest, TrailingMinimaAreLeftOut) {
  DrawEncoder encoder({{"a", {3}}});
  encoder.Int("a", 0, 9);
  encoder.Int("b", 0, 1000);  // not planned: its minimum
  encoder.Int("c", 7, 20);
  EXPECT_EQ(encoder.Bytes(), std::vector<uint8_t>({3}));
}

TEST(DrawEncoderTest, PlansThatNoLongerFitAreErrors) {
  DrawEncoder encoder({{"a", {12}}, {"never drawn", {1}}});
  EXPECT_EQ(encoder.Int("a", 0, 9), 9);
  EXPECT_EQ(encoder.Errors().size(), 2u);
}

TEST(DrawEncoderTest, TypedProviderCallsReadTheSameBytes) {
  std::mt19937 random(7);
  for (int round = 0; round < 500; ++round) {
    std::vector<uint8_t> bytes(16);
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(random());
    bytes.resize(random() % 17);
    FuzzedDataProvider typed(bytes.data(), bytes.size());
    InputDraws draws(bytes.data(), bytes.size());
    ASSERT_EQ(typed.ConsumeBool(), draws.Bool(""));
    ASSERT_EQ(typed.ConsumeIntegral<uint8_t>(), draws.Int("", 0, 255));
    ASSERT_EQ(typed.ConsumeIntegralInRange<size_t>(0, 7), draws.Int("", 0, 7));
    ASSERT_EQ(typed.ConsumeIntegralInRange(0, 2), draws.Int("", 0, 2));
    ASSERT_EQ(typed.ConsumeIntegral<uint32_t>(), draws.Int("", 0, 0xffffffff));
    ASSERT_EQ(typed.ConsumeIntegral<int64_t>(),
              draws.Int("", std::numeric_limits<int64_t>::min(),
                        std::numeric_limits<int64_t>::max()));
    ASSERT_EQ(typed.remaining_bytes(), draws.remaining_bytes());
  }
}

}  // namespace
}  // namespace kvcheck::fuzz
