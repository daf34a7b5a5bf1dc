// File: dtype.h
// Element types of kvcheck tensors (f32, f16, bf16) and exact conversions between them.
//
// Float16 and BFloat16 are bit containers: arithmetic always happens in f32 after a
// conversion. The conversions are the numeric contract the whole suite relies on:
//   - f16/bf16 -> f32 is exact for every one of the 65,536 bit patterns (NaN stays NaN,
//     with its payload shifted into the f32 mantissa; subnormals become normal floats).
//   - f32 -> f16/bf16 rounds to nearest, ties to even; values at or beyond the overflow
//     threshold (max finite + half an ulp) become +-inf; subnormal results are rounded
//     correctly; NaN stays NaN (quiet bit set, sign and the top payload bits kept).
// Highway 1.0.3's BF16FromF32 truncates, so these are written out here (see dtype.cc).
#ifndef KVCHECK_SRC_TENSOR_DTYPE_H_
#define KVCHECK_SRC_TENSOR_DTYPE_H_

#include <cstdint>

namespace kvcheck {

enum class DType : uint8_t { kF32, kF16, kBF16 };

inline constexpr DType kAllDTypes[] = {DType::kF32, DType::kF16, DType::kBF16};

// "f32", "f16", "bf16".
const char* DTypeName(DType dtype);

// Bytes per element: 4 or 2.
constexpr int DTypeSize(DType dtype) { return dtype == DType::kF32 ? 4 : 2; }

// Unit roundoff of the format: 2^-24 (f32), 2^-11 (f16), 2^-8 (bf16).
double DTypeUnitRoundoff(DType dtype);

// IEEE 754 binary16 bits.
struct Float16 {
  uint16_t bits = 0;
};

// bfloat16 bits (the top half of an f32).
struct BFloat16 {
  uint16_t bits = 0;
};

float F16BitsToF32(uint16_t bits);
uint16_t F32ToF16Bits(float value);
float BF16BitsToF32(uint16_t bits);
uint16_t F32ToBF16Bits(float value);

inline float ToFloat(float value) { return value; }
inline float ToFloat(Float16 value) { return F16BitsToF32(value.bits); }
inline float ToFloat(BFloat16 value) { return BF16BitsToF32(value.bits); }

// FromFloat<T>(x): x rounded to T (identity for float).
template <typename T>
T FromFloat(float value);
template <>
inline float FromFloat<float>(float value) { return value; }
template <>
inline Float16 FromFloat<Float16>(float value) { return Float16{F32ToF16Bits(value)}; }
template <>
inline BFloat16 FromFloat<BFloat16>(float value) { return BFloat16{F32ToBF16Bits(value)}; }

// Rounds an f32 to the precision of `dtype` and back (identity for f32).
float RoundToDType(float value, DType dtype);

// The DType of an element type.
template <typename T>
constexpr DType DTypeOf();
template <>
constexpr DType DTypeOf<float>() { return DType::kF32; }
template <>
constexpr DType DTypeOf<Float16>() { return DType::kF16; }
template <>
constexpr DType DTypeOf<BFloat16>() { return DType::kBF16; }

// Calls fn(T{}) with T the element type of `dtype`; returns what fn returns.
//   DispatchDType(t.dtype(), [&](auto tag) { using T = decltype(tag); ... });
template <typename Fn>
decltype(auto) DispatchDType(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kF16:
      return fn(Float16{});
    case DType::kBF16:
      return fn(BFloat16{});
    case DType::kF32:
      break;
  }
  return fn(float{});
}

}  // namespace kvcheck

#endif  // KVCHECK_SRC_TENSOR_DTYPE_H_
