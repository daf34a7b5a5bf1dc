// The GELU's and tanh's Highway paths on every compiled SIMD target, swept over the float
// range (every 1021st bit pattern of both signs, plus a dense sweep of [-12, 12] where GELU
// inputs live): TanhInPlace within 4 ulps of double tanh (reference/attention_bound.h's
// BoundModel::tanh_ulps), and GeluInPlace and GeluInPlaceScalar within the bound that a
// 4-ulp tanh and the roundings after it allow; NaN, +-inf and -0 as the header says.
#include "src/model/layer_ops.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "src/base/simd_targets_for_test.h"

namespace kvcheck::model {
namespace {

constexpr double kU = 0x1p-24;  // unit roundoff of f32

float FromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Finite floats: every 1021st bit pattern (both signs, subnormals included), then every 307th
// pattern of [-12, 12], then the edges of tanh's saturation (|x| around 18.7 and 9).
std::vector<float> SweptFloats() {
  std::vector<float> out;
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFull; bits += 1021) {
    const float f = FromBits(static_cast<uint32_t>(bits));
    if (std::isfinite(f)) out.push_back(f);
  }
  for (float f = 0.0f; f <= 12.0f;) {
    out.push_back(f);
    out.push_back(-f);
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    f = FromBits(bits + 307);
  }
  for (float f = 8.0f; f <= 20.0f; f += 1.0f / 4096) {
    out.push_back(f);
    out.push_back(-f);
  }
  return out;
}

// One ulp of f32 at |exact| (2^-149 among subnormals).
double UlpAt(double exact) {
  if (exact == 0) return 0x1p-149;
  return std::max(std::ldexp(1.0, std::ilogb(exact) - 23), 0x1p-149);
}

// The GELU's inner argument exactly as both paths compute it in f32.
float GeluArgument(float v) {
  const float k = std::sqrt(2.0f / static_cast<float>(M_PI));
  return k * (v + 0.044715f * v * v * v);
}

// |gelu(v) - 0.5 v (1 + tanh t)| with tanh within 4 ulps (<= 8u |tanh t|), then 1 + T
// rounded (u |1 + T| <= u (1 + |tanh t|) (1 + 8u)), 0.5 v (exact but for subnormals: 2^-150)
// and the product rounded (u |y|).
double GeluBound(float v, double tanh_t, double exact) {
  const double av = std::fabs(double{v});
  return 0.5 * av * kU * (8.0 * std::fabs(tanh_t) + 1.01 * (1.0 + std::fabs(tanh_t))) +
         kU * std::fabs(exact) * 1.01 + 0x1p-149;
}

void CheckOnTarget(const char* target, const std::vector<float>& inputs) {
  SCOPED_TRACE(target);
  // An odd length: the vector loop's tail runs too.
  std::vector<float> tanh_out(inputs), gelu_out(inputs), gelu_scalar(inputs);
  TanhInPlace(tanh_out.data(), static_cast<int64_t>(tanh_out.size()));
  GeluInPlace(gelu_out.data(), static_cast<int64_t>(gelu_out.size()));
  GeluInPlaceScalar(gelu_scalar.data(), static_cast<int64_t>(gelu_scalar.size()));
  double worst_tanh_ulps = 0, worst_gelu_ratio = 0;
  int failures = 0;
  for (size_t i = 0; i < inputs.size() && failures < 20; ++i) {
    const float x = inputs[i];
    const double exact_tanh = std::tanh(double{x});
    const double ulps = std::fabs(tanh_out[i] - exact_tanh) / UlpAt(exact_tanh);
    worst_tanh_ulps = std::max(worst_tanh_ulps, ulps);
    if (!(ulps <= 4.0)) {
      ADD_FAILURE() << "tanh(" << x << ") = " << tanh_out[i] << ", exact " << exact_tanh << ": "
                    << ulps << " ulps";
      ++failures;
    }
    const float t = GeluArgument(x);
    const double tanh_t = std::tanh(double{t});
    const double exact_gelu = 0.5 * double{x} * (1.0 + tanh_t);
    const double bound = GeluBound(x, tanh_t, exact_gelu);
    for (const float got : {gelu_out[i], gelu_scalar[i]}) {
      const double error = std::fabs(got - exact_gelu);
      worst_gelu_ratio = std::max(worst_gelu_ratio, error / bound);
      if (!(error <= bound)) {
        ADD_FAILURE() << "gelu(" << x << ") = " << got << " (vector " << gelu_out[i]
                      << ", scalar " << gelu_scalar[i] << "), exact " << exact_gelu
                      << ", bound " << bound;
        ++failures;
      }
    }
  }
  std::printf("%s: %zu inputs, worst tanh error %.2f ulps, worst gelu error/bound %.3f\n",
              target, inputs.size(), worst_tanh_ulps, worst_gelu_ratio);
}

TEST(LayerOpsTest, TanhAndGeluWithinTheirBoundsOnEverySimdTarget) {
  std::vector<float> inputs = SweptFloats();
  if (inputs.size() % 2 == 0) inputs.pop_back();
  ForEachSimdTarget([&](const char* target) { CheckOnTarget(target, inputs); });
}

TEST(LayerOpsTest, NonFiniteAndSignedZeroInputs) {
  ForEachSimdTarget([](const char* target) {
    SCOPED_TRACE(target);
    // Three elements: all in the tail on every target.
    float t[3] = {INFINITY, -INFINITY, -0.0f};
    TanhInPlace(t, 3);
    EXPECT_EQ(t[0], 1.0f);
    EXPECT_EQ(t[1], -1.0f);
    EXPECT_TRUE(t[2] == 0.0f && std::signbit(t[2]));
    float n = NAN;
    TanhInPlace(&n, 1);
    EXPECT_TRUE(std::isnan(n));
    for (auto gelu : {&GeluInPlace, &GeluInPlaceScalar}) {
      float g[3] = {NAN, INFINITY, -INFINITY};
      gelu(g, 3);
      EXPECT_TRUE(std::isnan(g[0]));
      EXPECT_EQ(g[1], INFINITY);
      EXPECT_TRUE(std::isnan(g[2]));
    }
  });
}

// The vector path and the scalar path give the same tokens only if they agree closely on
// ordinary activations: within 4 ulps of tanh's bits apart at most, element for element,
// over 17 lengths around the vector widths (the tail path included).
TEST(LayerOpsTest, VectorGeluMatchesScalarOnAllLengths) {
  ForEachSimdTarget([](const char* target) {
    SCOPED_TRACE(target);
    for (int64_t n = 1; n <= 17; ++n) {
      std::vector<float> a(n), b(n);
      for (int64_t i = 0; i < n; ++i) a[i] = b[i] = -4.0f + 0.47f * static_cast<float>(i);
      GeluInPlace(a.data(), n);
      GeluInPlaceScalar(b.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const float v = -4.0f + 0.47f * static_cast<float>(i);
        const double exact = 0.5 * v * (1.0 + std::tanh(double{GeluArgument(v)}));
        EXPECT_LE(std::fabs(a[i] - b[i]),
                  2 * GeluBound(v, std::tanh(double{GeluArgument(v)}), exact))
            << "n " << n << " i " << i;
      }
    }
  });
}

}  // namespace
}  // namespace kvcheck::model
