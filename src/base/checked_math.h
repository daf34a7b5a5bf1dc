// File: checked_math.h
// Overflow-checked int64_t arithmetic for size and offset computations.
//
// Every size that comes from a caller (shapes, sequence lengths, capacities) goes through
// these before it reaches an allocation or an index, so that a hostile size becomes an
// error instead of a wrapped value.
#ifndef KVCHECK_SRC_BASE_CHECKED_MATH_H_
#define KVCHECK_SRC_BASE_CHECKED_MATH_H_

#include <cstdint>
#include <optional>

#include "absl/types/span.h"

namespace kvcheck {

// a + b, or nullopt on overflow.
inline std::optional<int64_t> CheckedAdd(int64_t a, int64_t b) {
  int64_t result;
  if (__builtin_add_overflow(a, b, &result)) return std::nullopt;
  return result;
}

// a * b, or nullopt on overflow.
inline std::optional<int64_t> CheckedMul(int64_t a, int64_t b) {
  int64_t result;
  if (__builtin_mul_overflow(a, b, &result)) return std::nullopt;
  return result;
}

// Product of all values, or nullopt on overflow. The empty product is 1.
// REQUIRES: every value >= 0 (a zero anywhere makes the product 0 without overflow).
inline std::optional<int64_t> CheckedProduct(absl::Span<const int64_t> values) {
  for (int64_t v : values) {
    if (v == 0) return 0;
  }
  int64_t product = 1;
  for (int64_t v : values) {
    std::optional<int64_t> next = CheckedMul(product, v);
    if (!next) return std::nullopt;
    product = *next;
  }
  return product;
}

}  // namespace kvcheck

#endif  // KVCHECK_SRC_BASE_CHECKED_MATH_H_
