#include "src/tensor/dtype.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "gtest/gtest.h"

namespace kvcheck {
namespace {

bool IsNaN16(uint16_t bits, int exponent_bits) {
  const int mantissa_bits = 15 - exponent_bits;
  const uint16_t exponent_mask = static_cast<uint16_t>(((1u << exponent_bits) - 1u) << mantissa_bits);
  return (bits & exponent_mask) == exponent_mask && (bits & ((1u << mantissa_bits) - 1u)) != 0;
}

// Every one of the 65,536 half values widens exactly and narrows back to itself.
TEST(DType, F16RoundTripIsExactForAllBitPatterns) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const uint16_t h = static_cast<uint16_t>(bits);
    const float f = F16BitsToF32(h);
    if (IsNaN16(h, 5)) {
      EXPECT_TRUE(std::isnan(f)) << std::hex << bits;
      EXPECT_TRUE(IsNaN16(F32ToF16Bits(f), 5)) << std::hex << bits;
      EXPECT_EQ(std::signbit(f), (h & 0x8000) != 0);
      // The payload moves into the top of the f32 mantissa and back; narrowing sets the
      // quiet bit and keeps the sign (dtype.h).
      EXPECT_EQ(std::bit_cast<uint32_t>(f),
                (uint32_t{h & 0x8000u} << 16) | 0x7f800000u | (uint32_t{h & 0x3ffu} << 13))
          << std::hex << bits;
      EXPECT_EQ(F32ToF16Bits(f), h | 0x0200u) << std::hex << bits;
      continue;
    }
    EXPECT_EQ(F32ToF16Bits(f), h) << std::hex << bits;
  }
}

TEST(DType, BF16RoundTripIsExactForAllBitPatterns) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const uint16_t b = static_cast<uint16_t>(bits);
    const float f = BF16BitsToF32(b);
    if (IsNaN16(b, 8)) {
      EXPECT_TRUE(std::isnan(f)) << std::hex << bits;
      EXPECT_TRUE(IsNaN16(F32ToBF16Bits(f), 8)) << std::hex << bits;
      EXPECT_EQ(std::bit_cast<uint32_t>(f), uint32_t{b} << 16) << std::hex << bits;
      EXPECT_EQ(F32ToBF16Bits(f), b | 0x0040u) << std::hex << bits;
      continue;
    }
    EXPECT_EQ(F32ToBF16Bits(f), b) << std::hex << bits;
  }
}

// Widening is monotone over the finite values: the conversion table is a sorted ladder.
TEST(DType, F16WideningIsMonotoneOverPositiveFiniteValues) {
  float previous = -1.0f;
  for (uint32_t bits = 0; bits < 0x7c00; ++bits) {
    const float f = F16BitsToF32(static_cast<uint16_t>(bits));
    EXPECT_GT(f, previous) << std::hex << bits;
    previous = f;
  }
  EXPECT_EQ(previous, 65504.0f);
  EXPECT_EQ(F16BitsToF32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(F16BitsToF32(0x0400), std::ldexp(1.0f, -14));  // smallest normal
}

TEST(DType, F16NarrowingBoundaries) {
  EXPECT_EQ(F32ToF16Bits(65504.0f), 0x7bff);
  EXPECT_EQ(F32ToF16Bits(65519.996f), 0x7bff);    // just below the overflow threshold
  EXPECT_EQ(F32ToF16Bits(65520.0f), 0x7c00);      // tie at max + half ulp rounds to inf
  EXPECT_EQ(F32ToF16Bits(-1e10f), 0xfc00);
  EXPECT_EQ(F32ToF16Bits(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(F32ToF16Bits(std::ldexp(1.0f, -25)), 0x0000);          // tie to even: 0
  EXPECT_EQ(F32ToF16Bits(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(F32ToF16Bits(std::ldexp(3.0f, -25)), 0x0002);          // 1.5 subnormal units: tie to even 2
  EXPECT_EQ(F32ToF16Bits(-0.0f), 0x8000);
  EXPECT_EQ(F32ToF16Bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);   // tie to even (down)
  EXPECT_EQ(F32ToF16Bits(1.0f + std::ldexp(3.0f, -11)), 0x3c02);   // tie to even (up)
  // The largest subnormal rounds up into the smallest normal.
  EXPECT_EQ(F32ToF16Bits(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -26)), 0x0400);
  // A NaN whose payload sits only in the dropped bits stays NaN.
  EXPECT_TRUE(IsNaN16(F32ToF16Bits(std::bit_cast<float>(0x7f800001u)), 5));
}

TEST(DType, BF16NarrowingBoundaries) {
  EXPECT_EQ(F32ToBF16Bits(1.0f), 0x3f80);
  EXPECT_EQ(F32ToBF16Bits(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie to even (down)
  EXPECT_EQ(F32ToBF16Bits(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie to even (up)
  EXPECT_EQ(F32ToBF16Bits(std::bit_cast<float>(0x3f808001u)), 0x3f81);
  EXPECT_EQ(F32ToBF16Bits(std::numeric_limits<float>::max()), 0x7f80);  // overflows to inf
  EXPECT_EQ(F32ToBF16Bits(std::bit_cast<float>(0x7f7f7fffu)), 0x7f7f);  // stays finite
  EXPECT_EQ(F32ToBF16Bits(std::bit_cast<float>(0x00018000u)), 0x0002);  // subnormal tie to even
  EXPECT_TRUE(IsNaN16(F32ToBF16Bits(std::bit_cast<float>(0x7f800001u)), 8));
  EXPECT_TRUE(IsNaN16(F32ToBF16Bits(std::bit_cast<float>(0xff800001u)), 8));
}

TEST(DType, NamesSizesAndDispatch) {
  EXPECT_STREQ(DTypeName(DType::kF32), "f32");
  EXPECT_STREQ(DTypeName(DType::kF16), "f16");
  EXPECT_STREQ(DTypeName(DType::kBF16), "bf16");
  EXPECT_EQ(DTypeSize(DType::kF32), 4);
  EXPECT_EQ(DTypeSize(DType::kBF16), 2);
  for (DType dtype : kAllDTypes) {
    EXPECT_EQ(DispatchDType(dtype, [](auto tag) { return DTypeOf<decltype(tag)>(); }), dtype);
  }
  EXPECT_EQ(RoundToDType(1.0f / 3.0f, DType::kBF16), BF16BitsToF32(0x3eab));
}

}  // namespace
}  // namespace kvcheck
