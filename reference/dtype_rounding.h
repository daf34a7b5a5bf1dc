// File: dtype_rounding.h
// Obviously-correct rounding of a double to f32, f16 and bf16, for checking the engine's
// fast bit-twiddling conversions (src/tensor/dtype.h).
//
// The method is the definition: enumerate the finite non-negative values of the format from
// their fields (sign, exponent, mantissa) as exact doubles, find the two neighbours of |x|,
// take the nearer, and on a tie the one whose bit pattern is even. Infinity is the next rung
// above the largest finite value (at max + one ulp of the top binade), which is exactly
// IEEE 754's overflow rule. No bit tricks, no shared code with the engine.
#ifndef KVCHECK_REFERENCE_DTYPE_ROUNDING_H_
#define KVCHECK_REFERENCE_DTYPE_ROUNDING_H_

#include <cstdint>

namespace kvcheck::reference {

// A binary floating-point format with `exponent_bits` and `mantissa_bits` (fraction bits).
struct FloatFormat {
  int exponent_bits;
  int mantissa_bits;
};

inline constexpr FloatFormat kF16Format{5, 10};
inline constexpr FloatFormat kBF16Format{8, 7};
inline constexpr FloatFormat kF32Format{8, 23};

// The value of a bit pattern (sign, exponent, fraction), computed from the definition.
double DecodeBits(uint32_t bits, FloatFormat format);

// `x` rounded to nearest, ties to even, overflow to infinity; returns the bit pattern.
// REQUIRES: x is not NaN, and x is representable in double exactly (any f32 value is).
uint32_t RoundToFormatBits(double x, FloatFormat format);

}  // namespace kvcheck::reference

#endif  // KVCHECK_REFERENCE_DTYPE_ROUNDING_H_
