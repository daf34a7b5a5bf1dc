// The flash kernels' vector transcendentals against double precision, on every SIMD target
// Highway compiled and this CPU runs:
// - ExpOfNonPositive (flash_exp-inl.h), the online softmax's exp: within 2 ulps (the error
//   bound's exp_ulps) for every 61st float in [kExpMinArgument, 0] (18 million arguments);
//   exactly 1 at 0; 0 below the normal range, at -inf and for NaN.
// - Highway's Tanh, the kernels' softcap (flash_score_rules-inl.h): within 4 ulps (the
//   bound's tanh_ulps) for every 61st float in (0, 20], odd (tanh(-x) == -tanh(x) bit for
//   bit), and tanh of +-0, +-inf and NaN as std::tanh gives them.
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/attention/flash_exp_test.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// After foreach_target.h: compiled once per target with this file.
#include "hwy/contrib/math/math-inl.h"
#include "src/attention/flash_exp-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvcheck::flash_internal {
namespace HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;

// out[i] = ExpOfNonPositive(in[i]); count a multiple of the widest vector (the caller pads).
void ExpArray(const float* in, float* out, size_t count) {
  const hn::ScalableTag<float> df;
  for (size_t i = 0; i < count; i += hn::Lanes(df)) {
    hn::StoreU(ExpOfNonPositive(df, hn::LoadU(df, in + i)), df, out + i);
  }
}

float MinArgument() { return kExpMinArgument; }

// out[i] = Tanh(in[i]), as ExpArray.
void TanhArray(const float* in, float* out, size_t count) {
  const hn::ScalableTag<float> df;
  for (size_t i = 0; i < count; i += hn::Lanes(df)) {
    hn::StoreU(hn::Tanh(df, hn::LoadU(df, in + i)), df, out + i);
  }
}

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace kvcheck::flash_internal
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "gtest/gtest.h"
#include "src/base/simd_targets_for_test.h"

namespace kvcheck::flash_internal {
namespace {

HWY_EXPORT(ExpArray);
HWY_EXPORT(MinArgument);
HWY_EXPORT(TanhArray);

// fn (an exported ExpArray or TanhArray, as dispatched now) of every value: the input
// padded to whole vectors of the widest target.
std::vector<float> Apply(void (*fn)(const float*, float*, size_t), std::vector<float> in) {
  const size_t count = in.size();
  in.resize((count + 63) / 64 * 64, 0.0f);
  std::vector<float> out(in.size());
  fn(in.data(), out.data(), in.size());
  out.resize(count);
  return out;
}

std::vector<float> Exp(std::vector<float> in) {
  return Apply(&HWY_DYNAMIC_DISPATCH(ExpArray), std::move(in));
}
std::vector<float> Tanh(std::vector<float> in) {
  return Apply(&HWY_DYNAMIC_DISPATCH(TanhArray), std::move(in));
}

float FromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// |computed - exact| in units of the last place of the exact value rounded to float.
double UlpError(float computed, double exact) {
  const float rounded = static_cast<float>(exact);
  const double ulp = std::nextafter(rounded, std::numeric_limits<float>::infinity()) - rounded;
  return std::fabs(computed - exact) / ulp;
}

// The floats whose bits run from first_bits to last_bits with a stride of 61 (odd, so that
// every low mantissa pattern comes up), last_bits' float itself added, handed to on_chunk in
// chunks of about a million. Returns how many there were.
template <typename OnChunk>
int64_t SweepEvery61st(uint32_t first_bits, uint32_t last_bits, OnChunk on_chunk) {
  constexpr uint64_t kChunk = uint64_t{1} << 20;
  int64_t checked = 0;
  for (uint64_t first = first_bits; first <= last_bits; first += kChunk * 61) {
    std::vector<float> in;
    for (uint64_t bits = first; bits <= last_bits && bits < first + kChunk * 61; bits += 61) {
      in.push_back(FromBits(static_cast<uint32_t>(bits)));
    }
    if (first + kChunk * 61 > last_bits) in.push_back(FromBits(last_bits));
    on_chunk(in);
    checked += static_cast<int64_t>(in.size());
  }
  return checked;
}

void CheckExp(const char* target) {
  SCOPED_TRACE(target);
  const float min_argument = HWY_DYNAMIC_DISPATCH(MinArgument)();
  // The normal range of results: exp(min_argument) is a normal float, its predecessor's not.
  ASSERT_GE(std::exp(double{min_argument}), std::numeric_limits<float>::min());
  ASSERT_LT(std::exp(double{std::nextafter(min_argument, -1000.0f)}),
            std::numeric_limits<float>::min());
  // Every 61st float in [min_argument, 0], and min_argument itself. Most floats of the range
  // lie in [-1, 0], where the reduction's boundaries (+-ln2 / 2) and the tiniest arguments are.
  const uint32_t zero_bits = 0x80000000u;  // -0.0f: negative floats grow with their bits
  uint32_t min_bits;
  std::memcpy(&min_bits, &min_argument, sizeof min_bits);
  double worst = 0;
  float worst_at = 0;
  int64_t failures = 0;
  const int64_t checked = SweepEvery61st(zero_bits, min_bits, [&](const std::vector<float>& in) {
    const std::vector<float> out = Exp(in);
    for (size_t i = 0; i < in.size(); ++i) {
      const double error = UlpError(out[i], std::exp(double{in[i]}));
      if (error > worst) worst = error, worst_at = in[i];
      if (error > 2.0 && ++failures <= 10) {
        ADD_FAILURE() << "exp(" << in[i] << ") = " << out[i] << ", exact "
                      << std::exp(double{in[i]}) << ": " << error << " ulps";
      }
    }
  });
  EXPECT_EQ(failures, 0);
  std::printf("%s: %lld arguments, worst %.3f ulps at %.9g\n", target,
              static_cast<long long>(checked), worst,
              worst_at);

  // The special values: exp(+-0) is exactly 1; below the normal range, -inf and NaN give 0.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> special = Exp({0.0f, -0.0f, std::nextafter(min_argument, -1000.0f),
                                          -88.0f, -100.0f, -1e30f, -inf, nan, -nan});
  EXPECT_EQ(special[0], 1.0f);
  EXPECT_EQ(special[1], 1.0f);
  for (size_t i = 2; i < special.size(); ++i) EXPECT_EQ(special[i], 0.0f) << "case " << i;
}

void CheckTanh(const char* target) {
  SCOPED_TRACE(target);
  const float top = 20.0f;  // tanh rounds to 1 from about 9.01 on
  uint32_t top_bits;
  std::memcpy(&top_bits, &top, sizeof top_bits);
  double worst = 0;
  float worst_at = 0;
  int64_t failures = 0;
  const int64_t checked = SweepEvery61st(1, top_bits, [&](const std::vector<float>& in) {
    std::vector<float> negated(in.size());
    for (size_t i = 0; i < in.size(); ++i) negated[i] = -in[i];
    const std::vector<float> out = Tanh(in), out_negated = Tanh(negated);
    for (size_t i = 0; i < in.size(); ++i) {
      const double error = UlpError(out[i], std::tanh(double{in[i]}));
      if (error > worst) worst = error, worst_at = in[i];
      const float minus_out = -out[i];
      const bool odd = std::memcmp(&out_negated[i], &minus_out, sizeof minus_out) == 0;
      if ((error > 4.0 || !odd) && ++failures <= 10) {
        ADD_FAILURE() << "tanh(" << in[i] << ") = " << out[i] << ", exact "
                      << std::tanh(double{in[i]}) << ": " << error << " ulps; tanh(-x) = "
                      << out_negated[i];
      }
    }
  });
  EXPECT_EQ(failures, 0);
  std::printf("%s: tanh, %lld arguments, worst %.3f ulps at %.9g\n", target,
              static_cast<long long>(checked), worst, worst_at);

  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> special = Tanh({0.0f, -0.0f, inf, -inf, nan});
  EXPECT_EQ(special[0], 0.0f);
  EXPECT_FALSE(std::signbit(special[0]));
  EXPECT_EQ(special[1], 0.0f);
  EXPECT_TRUE(std::signbit(special[1]));
  EXPECT_EQ(special[2], 1.0f);
  EXPECT_EQ(special[3], -1.0f);
  EXPECT_TRUE(std::isnan(special[4]));
}

TEST(FlashExpTest, TanhWithinFourUlpsOnEverySimdTarget) {
  ForEachSimdTarget(CheckTanh);
}

TEST(FlashExpTest, WithinTwoUlpsOfExpOnEverySimdTarget) {
  ForEachSimdTarget(CheckExp);
}

}  // namespace
}  // namespace kvcheck::flash_internal
#endif  // HWY_ONCE
