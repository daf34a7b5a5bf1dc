// StreamingSum and InterleavedStreamingSum (the floors the benchmarks read against) sum every
// float of the array once, on every SIMD target, for lengths around the vector widths, the
// four-vector step, the 64 Ki floats below which the interleaved sum reads front to back, and
// its eight segments and tail. The values are small integers whose partial sums stay below
// 2^24, so every summation order is exact and a float read twice or skipped shows.
#include "bench/streaming_sum.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "src/base/simd_targets_for_test.h"
#include "src/base/split_mix.h"

namespace kvcheck::bench {
namespace {

void CheckSums(const char* target) {
  SCOPED_TRACE(target);
  uint64_t state = 99;
  constexpr int64_t kSmall = 64 * 1024;
  for (int64_t n :
       {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{16}, int64_t{17}, int64_t{63}, int64_t{64},
        int64_t{65}, int64_t{257}, kSmall - 1, kSmall, kSmall + 1, kSmall + 37 * 16 * 8 + 5,
        int64_t{100003}, int64_t{1} << 20, (int64_t{1} << 20) + 13}) {
    // Integers in [-8, 8) and one position marked with 1000.
    std::vector<float> x(n);
    int64_t exact = 0;
    for (int64_t i = 0; i < n; ++i) {
      x[i] = static_cast<float>(static_cast<int64_t>(SplitMix64(state) >> 60) - 8);
      if (i == n / 2) x[i] = 1000.0f;
      exact += static_cast<int64_t>(x[i]);
    }
    EXPECT_EQ(StreamingSum(x.data(), n), static_cast<float>(exact)) << "n " << n;
    EXPECT_EQ(InterleavedStreamingSum(x.data(), n), static_cast<float>(exact)) << "n " << n;
  }
}

TEST(StreamingSumTest, EveryFloatOnceOnEverySimdTarget) { ForEachSimdTarget(CheckSums); }

}  // namespace
}  // namespace kvcheck::bench
