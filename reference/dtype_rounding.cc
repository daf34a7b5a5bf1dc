#include "reference/dtype_rounding.h"

#include <cmath>

namespace kvcheck::reference {
namespace {

uint32_t BiasOf(FloatFormat format) { return (1u << (format.exponent_bits - 1)) - 1u; }
uint32_t MaxExponentField(FloatFormat format) { return (1u << format.exponent_bits) - 1u; }

// Magnitude of the non-negative pattern `magnitude_bits` (no sign bit); the pattern just past
// the largest finite value is treated as the rung max + ulp, i.e. where infinity "sits".
double RungValue(uint64_t magnitude_bits, FloatFormat format) {
  const uint64_t fraction_mask = (uint64_t{1} << format.mantissa_bits) - 1;
  const uint64_t exponent = magnitude_bits >> format.mantissa_bits;
  const uint64_t fraction = magnitude_bits & fraction_mask;
  const int bias = static_cast<int>(BiasOf(format));
  if (exponent == 0) {
    return std::ldexp(static_cast<double>(fraction), 1 - bias - format.mantissa_bits);
  }
  // For exponent == all-ones (infinity's field) this continues the ladder of the top binade.
  return std::ldexp(1.0 + std::ldexp(static_cast<double>(fraction), -format.mantissa_bits),
                    static_cast<int>(exponent) - bias);
}

}  // namespace

double DecodeBits(uint32_t bits, FloatFormat format) {
  const int total_bits = 1 + format.exponent_bits + format.mantissa_bits;
  const bool negative = ((bits >> (total_bits - 1)) & 1u) != 0;
  const uint32_t magnitude = bits & ((1u << (total_bits - 1)) - 1u);
  const uint32_t exponent = magnitude >> format.mantissa_bits;
  const uint32_t fraction = magnitude & ((1u << format.mantissa_bits) - 1u);
  double value;
  if (exponent == MaxExponentField(format)) {
    value = fraction == 0 ? INFINITY : NAN;
  } else {
    value = RungValue(magnitude, format);
  }
  return negative ? -value : value;
}

uint32_t RoundToFormatBits(double x, FloatFormat format) {
  const int total_bits = 1 + format.exponent_bits + format.mantissa_bits;
  const uint32_t sign = std::signbit(x) ? (1u << (total_bits - 1)) : 0u;
  const double magnitude = std::fabs(x);
  const uint64_t infinity_bits = uint64_t{MaxExponentField(format)} << format.mantissa_bits;
  if (std::isinf(magnitude)) return sign | static_cast<uint32_t>(infinity_bits);
  // Binary search for the largest rung <= magnitude among [0, infinity_bits].
  uint64_t lo = 0, hi = infinity_bits;
  if (magnitude >= RungValue(hi, format)) return sign | static_cast<uint32_t>(infinity_bits);
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (RungValue(mid, format) <= magnitude) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  // Adjacent rungs are short dyadic numbers, so their midpoint is exact in double and the
  // comparison below is exact (differences with a tiny x would not be).
  const double midpoint = (RungValue(lo, format) + RungValue(hi, format)) / 2;
  uint64_t chosen;
  if (magnitude < midpoint) {
    chosen = lo;
  } else if (magnitude > midpoint) {
    chosen = hi;
  } else {
    chosen = (lo % 2 == 0) ? lo : hi;  // tie: the even pattern
  }
  return sign | static_cast<uint32_t>(chosen);
}

}  // namespace kvcheck::reference
