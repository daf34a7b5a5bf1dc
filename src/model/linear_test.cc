// Linear's optimized path (our GEMV up to GemvBatchLimit() rows, sgemm beyond) against
// a double-precision product, within the dot-product bound |computed - exact| <= gamma_(n+1)
// * sum_k |w_k x_k| plus the bias's rounding, on row counts around the switch between the
// two; up to GemvBatchLimit() rows, each row the same bits as a one-row call (a short prefill
// chunk projects each token as a decode step of that token would); and the same bits on one,
// two and three threads.
#include <cblas.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "src/base/simd_targets_for_test.h"
#include "src/base/split_mix.h"
#include "src/model/gemv.h"
#include "src/model/layer_ops.h"

namespace kvcheck::model {
namespace {

// `count` values in [-2, 2) on a 2^-22 grid, from the stream `seed` starts.
std::vector<float> Values(int64_t count, uint64_t seed) {
  std::vector<float> out(count);
  uint64_t state = seed;
  for (float& v : out) {
    v = static_cast<float>(static_cast<int64_t>(SplitMix64(state) >> 40) - (1 << 23)) / (1 << 22);
  }
  return out;
}

TEST(LinearTest, MatchesExactProductsWithinTheBoundAroundTheGemvSgemmSwitch) {
  // Every target: the GEMV dispatches to the best one by default, and where Linear switches
  // to sgemm differs between targets.
  ForEachSimdTarget([](const char* target) {
    SCOPED_TRACE(target);
    // out: three of the sgemm path's slices of 128 outputs, the last partial.
    const int64_t in = 200, out = 300;
    const std::vector<float> w = Values(out * in, 1), bias = Values(out, 2);
    for (int64_t rows : {int64_t{1}, int64_t{2}, int64_t{7}, GemvBatchLimit(), GemvBatchLimit() + 1,
                         int64_t{50}}) {
      const std::vector<float> x = Values(rows * in, 3 + rows);
      for (bool with_bias : {false, true}) {
        for (int threads : {1, 2, 3}) {
          std::vector<float> y(rows * out, NAN);
          Linear(x.data(), rows, in, w.data(), with_bias ? bias.data() : nullptr, out, y.data(),
                 MatmulPath::kOptimized, threads);
          const double u = std::ldexp(1.0, -24);
          const double gamma = (in + 1) * u / (1 - (in + 1) * u);
          for (int64_t r = 0; r < rows; ++r) {
            for (int64_t n = 0; n < out; ++n) {
              double exact = 0, magnitude = 0;
              for (int64_t k = 0; k < in; ++k) {
                exact += double{x[r * in + k]} * w[n * in + k];
                magnitude += std::fabs(double{x[r * in + k]} * w[n * in + k]);
              }
              // The bias is added to the rounded product: one more rounding of the sum.
              const double b = with_bias ? double{bias[n]} : 0.0;
              const double bound =
                  gamma * magnitude + u * (std::fabs(exact + b) + gamma * magnitude);
              EXPECT_LE(std::fabs(y[r * out + n] - (exact + b)), bound)
                  << rows << " rows, threads " << threads << ", bias " << with_bias << ", row " << r
                  << ", output " << n;
            }
          }
        }
      }
    }
  });
}

TEST(LinearTest, ShortChunksProjectEachRowAsAOneRowCallBitForBit) {
  // Every target: the GEMV dispatches to the best one by default, and where Linear switches
  // to sgemm differs between targets.
  ForEachSimdTarget([](const char* target) {
    SCOPED_TRACE(target);
    const int64_t in = 96, out = 150;
    const std::vector<float> w = Values(out * in, 11), bias = Values(out, 12);
    for (int64_t rows : {int64_t{2}, int64_t{3}, int64_t{5}, GemvBatchLimit()}) {
      const std::vector<float> x = Values(rows * in, 13 + rows);
      for (int threads : {1, 2}) {
        std::vector<float> y(rows * out, NAN);
        Linear(x.data(), rows, in, w.data(), bias.data(), out, y.data(), MatmulPath::kOptimized,
               threads);
        for (int64_t r = 0; r < rows; ++r) {
          std::vector<float> one(out, NAN);
          Linear(x.data() + r * in, 1, in, w.data(), bias.data(), out, one.data(),
                 MatmulPath::kOptimized, 1);
          for (int64_t n = 0; n < out; ++n) {
            ASSERT_EQ(y[r * out + n], one[n])
                << rows << " rows, threads " << threads << ", row " << r << ", output " << n;
          }
        }
      }
    }
  });
}

TEST(LinearTest, SameBitsOnOneTwoAndThreeThreads) {
  // Every target: the GEMV dispatches to the best one by default, and where Linear switches
  // to sgemm differs between targets.
  ForEachSimdTarget([](const char* target) {
    SCOPED_TRACE(target);
    const int64_t in = 300, out = 600;  // the sgemm path: 5 slices of 128 outputs, one partial
    const std::vector<float> w = Values(out * in, 21), bias = Values(out, 22);
    for (int64_t rows : {int64_t{1}, int64_t{9}, GemvBatchLimit() + 1, int64_t{77}}) {
      const std::vector<float> x = Values(rows * in, 23 + rows);
      std::vector<float> one_thread(rows * out, NAN);
      Linear(x.data(), rows, in, w.data(), bias.data(), out, one_thread.data(),
             MatmulPath::kOptimized, 1);
      for (int threads : {2, 3}) {
        std::vector<float> y(rows * out, NAN);
        Linear(x.data(), rows, in, w.data(), bias.data(), out, y.data(), MatmulPath::kOptimized,
               threads);
        for (int64_t i = 0; i < rows * out; ++i) {
          ASSERT_EQ(y[i], one_thread[i]) << rows << " rows, threads " << threads << ", row "
                                         << i / out << ", output " << i % out;
        }
      }
    }
  });
}

// The sgemm path runs OpenBLAS single-threaded for the call (its own threads would spin after
// it) and gives the process its thread count back.
TEST(LinearTest, SgemmPathLeavesOpenBlasThreadCountAsItWas) {
  const int64_t in = 64, out = 300, rows = kGemvMaxBatch + 1;
  const std::vector<float> w = Values(out * in, 31), x = Values(rows * in, 32);
  std::vector<float> y(rows * out, NAN);
  const int before = openblas_get_num_threads();
  SetBlasThreads(2);
  Linear(x.data(), rows, in, w.data(), nullptr, out, y.data(), MatmulPath::kOptimized, 2);
  EXPECT_EQ(openblas_get_num_threads(), 2);
  SetBlasThreads(before);
  for (float value : y) ASSERT_FALSE(std::isnan(value));
}

}  // namespace
}  // namespace kvcheck::model
