// File: static_count-inl.h
// WithStaticCount<kMax>(n, f): calls f(std::integral_constant<int, n>()) for a count n that
// is known only at run time. The SIMD kernels block their registers by a template count (the
// GEMV's x rows per group, the flash kernels' query rows per group): the accumulators of a
// group must be named at compile time to stay in registers, and the number of rows left for
// the last group is a run-time value.
//
// Highway code, included once per target after hwy/foreach_target.h: the kernels' lambdas
// carry their target's attributes, and GCC inlines them only into a function compiled for
// the same target. A generic version left the dense decode kernel's group lambdas as
// out-of-line calls, one per tile and group; this one compiles to one function per kernel,
// as the switches it replaced did.

// Per-target include guard (Highway's convention for -inl.h files).
#if defined(KVCHECK_SRC_BASE_STATIC_COUNT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVCHECK_SRC_BASE_STATIC_COUNT_INL_H_
#undef KVCHECK_SRC_BASE_STATIC_COUNT_INL_H_
#else
#define KVCHECK_SRC_BASE_STATIC_COUNT_INL_H_
#endif

#include <type_traits>
#include <utility>

#include "hwy/highway.h"
#include "src/base/check.h"

HWY_BEFORE_NAMESPACE();
namespace kvcheck {
namespace HWY_NAMESPACE {

// n must lie in [1, kMax] (checked: a count outside would run no kernel at all). Instantiates
// f for every count in [1, kMax]; the chain of compares costs what a switch does.
template <int kMax, typename F>
HWY_INLINE void WithStaticCount(int n, const F& f) {
  static_assert(kMax >= 1, "a count of at least 1");
  KV_CHECK(n >= 1 && n <= kMax);
  [&]<int... kLess>(std::integer_sequence<int, kLess...>) HWY_ATTR {
    (void)((n == kLess + 1 && (f(std::integral_constant<int, kLess + 1>()), true)) || ...);
  }(std::make_integer_sequence<int, kMax>());
}

}  // namespace HWY_NAMESPACE
}  // namespace kvcheck
HWY_AFTER_NAMESPACE();

#endif  // KVCHECK_SRC_BASE_STATIC_COUNT_INL_H_
