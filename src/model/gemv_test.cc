// Gemv (Highway) and GemvScalar against a double-precision dot product, within the standard
// dot-product bound |computed - exact| <= gamma_(n+1) * sum_k |w_k x_k| (u = 2^-24; any
// summation order), on shapes around vector widths and the row streams (2, 4 or 8), with
// 1..3 threads (1003 rows: each thread's region takes several steps and has rows past its
// streams); the same bits for a row whatever the thread count and the number of row streams;
// the streams chosen by the first large product (per thread count); GemvBatch's rows the
// same bits as Gemv's; and a bias the same bits as an add after the product.
#include "src/model/gemv.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "src/base/simd_targets_for_test.h"
#include "src/base/split_mix.h"

namespace kvcheck::model {
namespace {

// A value in [-2, 2) on a 2^-22 grid, the next of the stream `state` seeds.
float NextValue(uint64_t& state) {
  return static_cast<float>(static_cast<int64_t>(SplitMix64(state) >> 40) - (1 << 23)) /
         (1 << 22);
}

void CheckGemvWithinTheBound(const char* target);

TEST(GemvTest, MatchesExactDotProductsWithinTheBoundOnEverySimdTarget) {
  ForEachSimdTarget(CheckGemvWithinTheBound);
}

void CheckGemvWithinTheBound(const char* target) {
  SCOPED_TRACE(target);
  uint64_t state = 12345;
  for (int64_t rows : {1, 3, 4, 5, 6, 7, 8, 11, 12, 13, 17, 63, 64, 65, 130, 144, 257, 289, 1003}) {
    for (int64_t cols : {1, 7, 8, 9, 16, 17, 33, 768}) {
      std::vector<float> w(rows * cols), x(cols);
      for (float& v : w) v = NextValue(state);
      for (float& v : x) v = NextValue(state);
      std::vector<float> y_one_thread(rows, NAN);
      Gemv(w.data(), x.data(), rows, cols, y_one_thread.data(), 1);
      for (int threads : {1, 2, 3}) {
        std::vector<float> y(rows, NAN), y_scalar(rows, NAN);
        Gemv(w.data(), x.data(), rows, cols, y.data(), threads);
        // A row's sum does not depend on the row block or thread it lands in (the generation
        // laws compare runs with different thread counts token for token).
        for (int64_t r = 0; r < rows; ++r) {
          EXPECT_EQ(y[r], y_one_thread[r]) << rows << "x" << cols << " threads " << threads;
        }
        // Nor on how many far-apart rows are read at a time (GemvStreams).
        for (int streams : {2, 4, 8}) {
          std::vector<float> y_streams(rows, NAN);
          GemvWithStreams(w.data(), x.data(), rows, cols, y_streams.data(), threads, streams);
          for (int64_t r = 0; r < rows; ++r) {
            ASSERT_EQ(y_streams[r], y_one_thread[r])
                << rows << "x" << cols << " threads " << threads << " streams " << streams;
          }
        }
        GemvScalar(w.data(), x.data(), rows, cols, y_scalar.data());
        const double u = std::ldexp(1.0, -24);
        const double gamma = (cols + 1) * u / (1 - (cols + 1) * u);
        for (int64_t r = 0; r < rows; ++r) {
          double exact = 0, magnitude = 0;
          for (int64_t k = 0; k < cols; ++k) {
            exact += double{w[r * cols + k]} * x[k];
            magnitude += std::fabs(double{w[r * cols + k]} * x[k]);
          }
          EXPECT_LE(std::fabs(y[r] - exact), gamma * magnitude)
              << rows << "x" << cols << " threads " << threads << " row " << r;
          EXPECT_LE(std::fabs(y_scalar[r] - exact), gamma * magnitude);
        }
      }
    }
  }
}

// GemvBatch: row j of y is, bit for bit, Gemv's of row j of x, for every batch size, on every
// SIMD target, whatever the thread count (a short prefill chunk then computes each token's
// projections as a decode step of that token would).
void CheckBatchEqualsGemvPerRow(const char* target);

TEST(GemvTest, BatchEqualsGemvOfEachRowBitForBitOnEverySimdTarget) {
  ForEachSimdTarget(CheckBatchEqualsGemvPerRow);
}

void CheckBatchEqualsGemvPerRow(const char* target) {
  SCOPED_TRACE(target);
  uint64_t state = 777;
  // cols: around the vector widths, around the kernel's 512-float k blocks, and several
  // blocks then a tail shorter than a vector.
  for (int64_t rows : {1, 5, 6, 7, 13, 64, 130, 289}) {
    for (int64_t cols : {1, 7, 16, 17, 511, 512, 513, 1040, 1043}) {
      // m: around the register groups of x rows (2 or 4 by target) and the largest batch.
      for (int64_t m : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{4}, int64_t{5}, int64_t{7},
                        int64_t{8}, int64_t{9}, kGemvMaxBatch - 1, kGemvMaxBatch}) {
        std::vector<float> w(rows * cols), x(m * cols);
        for (float& v : w) v = NextValue(state);
        for (float& v : x) v = NextValue(state);
        std::vector<float> expected(m * rows, NAN);
        for (int64_t j = 0; j < m; ++j) {
          Gemv(w.data(), x.data() + j * cols, rows, cols, expected.data() + j * rows, 1);
        }
        for (int threads : {1, 2, 3}) {
          std::vector<float> y(m * rows, NAN);
          GemvBatch(w.data(), x.data(), m, rows, cols, y.data(), threads);
          for (int64_t i = 0; i < m * rows; ++i) {
            ASSERT_EQ(y[i], expected[i]) << rows << "x" << cols << " m " << m << " threads "
                                         << threads << " x row " << i / rows << " row " << i % rows;
          }
        }
      }
    }
  }
}

// With a bias, every output is bit for bit the product's then a separate add of its bias (as
// Linear did after the product before the GEMV took the bias), for the one-row form on any
// thread and stream count and for the batch form, on every SIMD target (a -0 bias included).
void CheckBiasIsTheProductThenAnAdd(const char* target);

TEST(GemvTest, BiasIsTheProductThenAnAddBitForBitOnEverySimdTarget) {
  ForEachSimdTarget(CheckBiasIsTheProductThenAnAdd);
}

void CheckBiasIsTheProductThenAnAdd(const char* target) {
  SCOPED_TRACE(target);
  uint64_t state = 4242;
  for (int64_t rows : {1, 6, 7, 65, 130, 1003}) {
    for (int64_t cols : {1, 9, 17, 513}) {
      std::vector<float> w(rows * cols), x(kGemvMaxBatch * cols), bias(rows);
      for (float& v : w) v = NextValue(state);
      for (float& v : x) v = NextValue(state);
      for (float& v : bias) v = NextValue(state);
      bias[0] = -0.0f;
      std::vector<float> expected(kGemvMaxBatch * rows, NAN);
      for (int64_t j = 0; j < kGemvMaxBatch; ++j) {
        Gemv(w.data(), x.data() + j * cols, rows, cols, expected.data() + j * rows, 1);
        for (int64_t r = 0; r < rows; ++r) expected[j * rows + r] += bias[r];
      }
      for (int threads : {1, 2, 3}) {
        for (int streams : {2, 4, 8}) {
          std::vector<float> y(rows, NAN);
          GemvWithStreams(w.data(), x.data(), rows, cols, y.data(), threads, streams, bias.data());
          for (int64_t r = 0; r < rows; ++r) {
            ASSERT_EQ(y[r], expected[r])
                << rows << "x" << cols << " threads " << threads << " streams " << streams;
          }
        }
        for (int64_t m : {int64_t{2}, int64_t{5}, kGemvMaxBatch}) {
          std::vector<float> y(m * rows, NAN);
          GemvBatch(w.data(), x.data(), m, rows, cols, y.data(), threads, bias.data());
          for (int64_t i = 0; i < m * rows; ++i) {
            ASSERT_EQ(y[i], expected[i]) << rows << "x" << cols << " m " << m << " threads "
                                         << threads << " row " << i % rows;
          }
        }
      }
    }
  }
}

// The first product of at least 64 MiB of weights on a given number of threads chooses the
// stream count (2, 4 or 8) for that many, and returns the same bits as any; the products
// before it (the other tests' are all smaller) leave it unchosen, and so does a large product
// on another number of threads.
TEST(GemvTest, FirstLargeProductChoosesTheStreamsPerThreadCount) {
  EXPECT_EQ(GemvStreams(1), 0);
  EXPECT_EQ(GemvStreams(2), 0);
  constexpr int64_t rows = 4096, cols = 4096;  // 64 MiB
  uint64_t state = 99;
  std::vector<float> w(rows * cols), x(cols);
  for (float& v : w) v = NextValue(state);
  for (float& v : x) v = NextValue(state);
  std::vector<float> small(3, NAN);
  Gemv(w.data(), x.data(), 3, cols, small.data(), 1);  // 48 KiB: too small to choose
  EXPECT_EQ(GemvStreams(1), 0);
  std::vector<float> y(rows, NAN), expected(rows, NAN);
  GemvWithStreams(w.data(), x.data(), rows, cols, expected.data(), 2, 2);
  Gemv(w.data(), x.data(), rows, cols, y.data(), 1);
  const int one = GemvStreams(1);
  EXPECT_TRUE(one == 2 || one == 4 || one == 8) << one;
  EXPECT_EQ(GemvStreams(2), 0);  // one thread's choice is not two threads'
  for (int64_t r = 0; r < rows; ++r) ASSERT_EQ(y[r], expected[r]) << "row " << r;
  std::fill(y.begin(), y.end(), NAN);
  Gemv(w.data(), x.data(), rows, cols, y.data(), 2);
  const int two = GemvStreams(2);
  EXPECT_TRUE(two == 2 || two == 4 || two == 8) << two;
  for (int64_t r = 0; r < rows; ++r) ASSERT_EQ(y[r], expected[r]) << "row " << r;
  Gemv(w.data(), x.data(), rows, cols, y.data(), 2);  // chosen once: the same after
  Gemv(w.data(), x.data(), rows, cols, y.data(), 1);
  EXPECT_EQ(GemvStreams(1), one);
  EXPECT_EQ(GemvStreams(2), two);
  for (int64_t r = 0; r < rows; ++r) ASSERT_EQ(y[r], expected[r]) << "row " << r;
  EXPECT_EQ(GemvStreams(3), 0);
}

}  // namespace
}  // namespace kvcheck::model
