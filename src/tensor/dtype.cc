#include "src/tensor/dtype.h"

#include <bit>
#include <cmath>

namespace kvcheck {

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "f32";
    case DType::kF16:
      return "f16";
    case DType::kBF16:
      return "bf16";
  }
  return "unknown";
}

double DTypeUnitRoundoff(DType dtype) {
  switch (dtype) {
    case DType::kF16:
      return std::ldexp(1.0, -11);
    case DType::kBF16:
      return std::ldexp(1.0, -8);
    case DType::kF32:
      break;
  }
  return std::ldexp(1.0, -24);
}

float F16BitsToF32(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in f32 (needs at most 10 significant bits).
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return std::bit_cast<float>(std::bit_cast<uint32_t>(magnitude) | sign);
  }
  if (exponent == 0x1f) {
    // Inf or NaN: the payload moves to the top of the f32 mantissa, so NaN stays NaN.
    return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  }
  // Normal: rebias the exponent from 15 to 127.
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

uint16_t F32ToF16Bits(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t magnitude = x & 0x7fffffffu;
  if (magnitude > 0x7f800000u) {
    // NaN: force the quiet bit so a payload that lives only in the dropped low bits
    // cannot turn into infinity.
    return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  }
  // 65520 = 65504 (max finite) + half an ulp (16); the tie rounds to even, i.e. to inf.
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (magnitude >= 0x38800000u) {
    // Normal half (>= 2^-14): rebias the exponent and keep the top 10 mantissa bits,
    // rounding on the 13 dropped bits. A carry out of the mantissa bumps the exponent,
    // which is exactly the right result (including 65504 < x < 65520 staying finite).
    const uint32_t rebased = magnitude - (112u << 23);
    uint32_t half = rebased >> 13;
    const uint32_t dropped = rebased & 0x1fffu;
    if (dropped > 0x1000u || (dropped == 0x1000u && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  // Below 2^-25 everything rounds to zero (2^-25 itself is a tie and goes to even 0).
  if (magnitude <= 0x33000000u) return sign;
  // Subnormal half: result = round(x / 2^-24). With x = m * 2^(e - 150) (m with the
  // implicit bit), that is m >> (126 - e), rounded to nearest even.
  const uint32_t exponent = magnitude >> 23;  // 102..112 here
  const uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - exponent;  // 14..24
  uint32_t half = significand >> shift;
  const uint32_t dropped = significand & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1u);
  if (dropped > halfway || (dropped == halfway && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

float BF16BitsToF32(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

uint16_t F32ToBF16Bits(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    // NaN: keep sign and top payload bits, force the quiet bit (never becomes inf).
    return static_cast<uint16_t>((x >> 16) | 0x0040u);
  }
  // Round to nearest even on the 16 dropped bits. bf16 shares f32's exponent, so the
  // carry handles subnormals, the normal/subnormal boundary and overflow to inf alike.
  const uint32_t rounding_bias = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding_bias) >> 16);
}

float RoundToDType(float value, DType dtype) {
  switch (dtype) {
    case DType::kF16:
      return F16BitsToF32(F32ToF16Bits(value));
    case DType::kBF16:
      return BF16BitsToF32(F32ToBF16Bits(value));
    case DType::kF32:
      break;
  }
  return value;
}

}  // namespace kvcheck
