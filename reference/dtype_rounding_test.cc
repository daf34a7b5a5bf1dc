// The engine's bit-twiddling conversions (src/tensor/dtype.h) against the reference rounding
// that follows the definition (reference/dtype_rounding.h).
#include "reference/dtype_rounding.h"

#include <bit>
#include <cmath>
#include <cstdint>

#include "gtest/gtest.h"
#include "rapidcheck.h"
#include "rapidcheck/gtest.h"
#include "src/tensor/dtype.h"

namespace kvcheck::reference {
namespace {

struct Format16 {
  FloatFormat format;
  float (*widen)(uint16_t);
  uint16_t (*narrow)(float);
  const char* name;
};

const Format16 kFormats[] = {
    {kF16Format, &F16BitsToF32, &F32ToF16Bits, "f16"},
    {kBF16Format, &BF16BitsToF32, &F32ToBF16Bits, "bf16"},
};

bool IsNaNBits(uint16_t bits, FloatFormat format) {
  return std::isnan(DecodeBits(bits, format));
}

// Engine narrowing of x equals the reference rounding (NaN only checked to stay NaN).
::testing::AssertionResult NarrowsLikeReference(const Format16& f, float x) {
  const uint16_t engine = f.narrow(x);
  if (std::isnan(x)) {
    if (IsNaNBits(engine, f.format)) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << f.name << ": NaN became 0x" << std::hex << engine;
  }
  const uint32_t expected = RoundToFormatBits(x, f.format);
  if (engine == expected) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << f.name << ": x = " << x << " (0x" << std::hex << std::bit_cast<uint32_t>(x)
         << ") engine 0x" << engine << " reference 0x" << expected;
}

TEST(DTypeRounding, ReferenceDecodingMatchesEngineWideningForAllPatterns) {
  for (const Format16& f : kFormats) {
    for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
      const double reference = DecodeBits(bits, f.format);
      const float engine = f.widen(static_cast<uint16_t>(bits));
      if (std::isnan(reference)) {
        EXPECT_TRUE(std::isnan(engine)) << f.name << " " << bits;
      } else {
        EXPECT_EQ(static_cast<double>(engine), reference) << f.name << " " << bits;
      }
    }
  }
}

// Every rounding boundary of both formats: each value, each midpoint between neighbours, and
// the f32 values one ulp either side of the midpoint.
TEST(DTypeRounding, EngineNarrowingMatchesReferenceAtEveryBoundary) {
  for (const Format16& f : kFormats) {
    const uint32_t infinity = ((1u << f.format.exponent_bits) - 1u) << f.format.mantissa_bits;
    for (uint32_t bits = 0; bits < infinity; ++bits) {
      const double low = DecodeBits(bits, f.format);
      // The rung above the largest finite value is max + ulp (where overflow starts).
      const double high = bits + 1 < infinity
                              ? DecodeBits(bits + 1, f.format)
                              : low + (low - DecodeBits(bits - 1, f.format));
      const float mid = static_cast<float>((low + high) / 2);  // exact in f32
      for (float x : {static_cast<float>(low), mid, std::nextafter(mid, 0.0f),
                      std::nextafter(mid, INFINITY)}) {
        ASSERT_TRUE(NarrowsLikeReference(f, x));
        ASSERT_TRUE(NarrowsLikeReference(f, -x));
      }
    }
    EXPECT_TRUE(NarrowsLikeReference(f, INFINITY));
    EXPECT_TRUE(NarrowsLikeReference(f, -INFINITY));
    EXPECT_TRUE(NarrowsLikeReference(f, std::numeric_limits<float>::max()));
    EXPECT_TRUE(NarrowsLikeReference(f, std::numeric_limits<float>::denorm_min()));
    EXPECT_TRUE(NarrowsLikeReference(f, NAN));
  }
}

RC_GTEST_PROP(DTypeRounding, EngineNarrowingMatchesReferenceOnRandomF32, (uint32_t bits)) {
  const float x = std::bit_cast<float>(bits);
  for (const Format16& f : kFormats) RC_ASSERT(NarrowsLikeReference(f, x));
}

// Random f32 values concentrated on the interesting range (near 1, subnormal halves, near
// the f16 overflow threshold) rather than spread over all exponents.
RC_GTEST_PROP(DTypeRounding, EngineNarrowingMatchesReferenceNearInterestingExponents, ()) {
  const int exponent = *rc::gen::element(-26, -25, -24, -15, -14, -1, 0, 1, 14, 15, 16);
  const uint32_t fraction = *rc::gen::inRange<uint32_t>(0, 1u << 23);
  const bool negative = *rc::gen::arbitrary<bool>();
  const float x = std::ldexp(1.0f + std::ldexp(static_cast<float>(fraction), -23), exponent);
  for (const Format16& f : kFormats) RC_ASSERT(NarrowsLikeReference(f, negative ? -x : x));
}

}  // namespace
}  // namespace kvcheck::reference
