// The dense decode kernel's tiles (FlashOptions::decode_tile_keys) on every SIMD target: a
// decode over keys that cross several tiles, for tile lengths that end on, inside and one
// past a vector, and the automatic choice, plain or segmented, agrees with the textbook
// attention (sgemm, softmax, sgemm) to f32 accuracy, in f32 and bf16, with and without a mask
// and ALiBi; and out-of-range options are refused with an error that names the option.
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "src/attention/flash_attention.h"
#include "src/attention/naive_attention.h"
#include "src/base/simd_targets_for_test.h"
#include "src/base/split_mix.h"

namespace kvcheck {
namespace {

Tensor RandomTensor(DType dtype, std::vector<int64_t> shape, uint64_t seed) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  std::vector<float> values(count);
  for (float& x : values) {
    x = static_cast<float>(static_cast<int64_t>(SplitMix64(seed) >> 40) - (1 << 23)) /
        static_cast<float>(1 << 23);
  }
  return *Tensor::FromFloats(dtype, shape, values);
}

// Largest |a - b| over the elements, both f32.
double MaxDifference(const Tensor& a, const Tensor& b) {
  const std::vector<float> x = a.ToFloats(), y = b.ToFloats();
  double worst = x.size() == y.size() ? 0.0 : INFINITY;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(x[i]) - y[i]));
    if (std::isnan(x[i]) != std::isnan(y[i])) worst = INFINITY;
  }
  return worst;
}

TEST(FlashDecodeTiles, EveryTileLengthAgreesWithTextbookAttention) {
  // 2 batch rows, 6 or 18 heads on 2 KV heads (blocks of one group of three rows, or of three
  // groups), D = 64; 4703 keys: one automatic tile of a one-group block and part of a second,
  // several of a three-group block (which keeps a tile's K and V within the L2 budget); without
  // a mask or ALiBi, segmented tiles of four segments and three keys left over.
  constexpr int64_t kKeys = kMaxDecodeTileKeys + 607;
  // (Not structured bindings: clang 14 does not let the lambda below capture them.)
  for (const std::pair<DType, int>& shape :
       {std::pair{DType::kF32, 6}, std::pair{DType::kBF16, 6}, std::pair{DType::kF32, 18}}) {
    const DType dtype = shape.first;
    const int heads = shape.second;
    const Tensor q = RandomTensor(dtype, {2, heads, 1, 64}, 1);
    // The outputs are rounded to the dtype: bf16's one rounding may differ by its unit in
    // the last place (2^-8 relative; the outputs are below 0.1 here).
    const double tolerance = dtype == DType::kF32 ? 2e-5 : 1e-3;
    const Tensor k = RandomTensor(dtype, {2, 2, kKeys, 64}, 2);
    const Tensor v = RandomTensor(dtype, {2, 2, kKeys, 64}, 3);
    for (int feature = 0; feature < 3; ++feature) {
      AttentionParams params;
      if (feature == 1) {  // a mask removing the first 5 keys of batch row 1, finite elsewhere
        Tensor mask = *Tensor::Zeros(DType::kF32, {2, 1, 1, kKeys});
        float* m = mask.data<float>();
        for (int64_t j = 0; j < kKeys; ++j) m[j] = -0.25f * static_cast<float>(j % 3);
        for (int64_t j = 0; j < 5; ++j) m[kKeys + j] = -INFINITY;
        params.mask = std::move(mask);
      } else if (feature == 2) {
        for (int h = 0; h < heads; ++h) {
          params.alibi_slopes.push_back(std::ldexp(1.0f, -(h % 8 + 6)));
        }
      }
      const absl::StatusOr<Tensor> expected = NaiveAttention(q, k, v, params);
      ASSERT_TRUE(expected.ok()) << expected.status();
      ForEachSimdTarget([&](const std::string& target) {
        for (int tile : {0, 1, 15, 16, 17, 32, 33, 100, 1000, 1024, kMaxDecodeTileKeys}) {
          for (int threads : {1, 2}) {
            const absl::StatusOr<Tensor> out = FlashAttention(
                q, k, v, params, {.num_threads = threads, .decode_tile_keys = tile});
            ASSERT_TRUE(out.ok()) << out.status();
            EXPECT_LT(MaxDifference(*out, *expected), tolerance)
                << target << " " << DTypeName(dtype) << " heads " << heads << " feature "
                << feature << " tile " << tile << " threads " << threads;
          }
        }
      });
    }
  }
}

// f16 K and V with an infinite key element and a NaN value element, decoded on every target:
// an older target's f16 widening must keep them (Highway's emulated one turns exponent 31
// into finite numbers). A query of ones meets k[5] = +inf with a positive score, so every row
// of that KV head is NaN (an infinite weight has no value); the other KV head's rows have a
// NaN only in dimension 3 (v[7][3] = NaN).
TEST(FlashDecodeTiles, F16InfinityAndNaNSurviveEveryTarget) {
  constexpr int64_t kKeys = 100, kDim = 64;
  const Tensor q = *Tensor::Filled(DType::kF16, {1, 6, 1, kDim}, 1.0f);
  Tensor k = RandomTensor(DType::kF16, {1, 2, kKeys, kDim}, 4);
  Tensor v = RandomTensor(DType::kF16, {1, 2, kKeys, kDim}, 5);
  k.SetFloat({0, 0, 5, 9}, INFINITY);
  v.SetFloat({0, 1, 7, 3}, NAN);
  ForEachSimdTarget([&](const std::string& target) {
    for (int tile : {0, 16, 32}) {
      const absl::StatusOr<Tensor> out = FlashAttention(q, k, v, {}, {.decode_tile_keys = tile});
      ASSERT_TRUE(out.ok()) << out.status();
      for (int64_t h = 0; h < 6; ++h) {
        for (int64_t d = 0; d < kDim; ++d) {
          const bool nan = h < 3 || d == 3;
          EXPECT_EQ(std::isnan(out->GetFloat({0, h, 0, d})), nan)
              << target << " tile " << tile << " head " << h << " dim " << d;
        }
      }
    }
  });
}

TEST(FlashDecodeTiles, OutOfRangeOptionsNameTheOption) {
  const Tensor q = RandomTensor(DType::kF32, {1, 2, 1, 8}, 4);
  const Tensor k = RandomTensor(DType::kF32, {1, 1, 40, 8}, 5);
  const Tensor v = RandomTensor(DType::kF32, {1, 1, 40, 8}, 6);
  struct Bad {
    FlashOptions options;
    std::string names;
  };
  for (const Bad& bad : {Bad{{.decode_tile_keys = -1}, "decode_tile_keys -1"},
                         Bad{{.decode_tile_keys = kMaxDecodeTileKeys + 1}, "decode_tile_keys 4097"},
                         Bad{{.num_threads = 0}, "num_threads 0"},
                         Bad{{.num_threads = 257}, "num_threads 257"},
                         Bad{{.kv_splits = -2}, "kv_splits -2"}}) {
    const absl::StatusOr<Tensor> out = FlashAttention(q, k, v, {}, bad.options);
    ASSERT_FALSE(out.ok()) << bad.names;
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << bad.names;
    EXPECT_NE(out.status().message().find(bad.names), std::string::npos) << out.status();
  }
  for (int tile : {1, kMaxDecodeTileKeys}) {
    EXPECT_TRUE(FlashAttention(q, k, v, {}, {.decode_tile_keys = tile}).ok()) << tile;
  }
}

}  // namespace
}  // namespace kvcheck
