#include "bench/fma_peak.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/fma_peak.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kvcheck::bench {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// `iterations` x 12 vector FMAs on independent chains; returns lanes per vector, and the sum
// in *sink so that the work is used.
size_t FmaChainsImpl(int64_t iterations, float* sink) {
  const hn::ScalableTag<float> d;
  const auto m = hn::Set(d, 0.999999f), c = hn::Set(d, 1e-7f);
  auto a0 = hn::Set(d, 1.0f), a1 = hn::Set(d, 1.1f), a2 = hn::Set(d, 1.2f);
  auto a3 = hn::Set(d, 1.3f), a4 = hn::Set(d, 1.4f), a5 = hn::Set(d, 1.5f);
  auto a6 = hn::Set(d, 1.6f), a7 = hn::Set(d, 1.7f), a8 = hn::Set(d, 1.8f);
  auto a9 = hn::Set(d, 1.9f), a10 = hn::Set(d, 2.0f), a11 = hn::Set(d, 2.1f);
  for (int64_t i = 0; i < iterations; ++i) {
    a0 = hn::MulAdd(a0, m, c);
    a1 = hn::MulAdd(a1, m, c);
    a2 = hn::MulAdd(a2, m, c);
    a3 = hn::MulAdd(a3, m, c);
    a4 = hn::MulAdd(a4, m, c);
    a5 = hn::MulAdd(a5, m, c);
    a6 = hn::MulAdd(a6, m, c);
    a7 = hn::MulAdd(a7, m, c);
    a8 = hn::MulAdd(a8, m, c);
    a9 = hn::MulAdd(a9, m, c);
    a10 = hn::MulAdd(a10, m, c);
    a11 = hn::MulAdd(a11, m, c);
  }
  const auto sum = hn::Add(
      hn::Add(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)), hn::Add(hn::Add(a4, a5), hn::Add(a6, a7))),
      hn::Add(hn::Add(a8, a9), hn::Add(a10, a11)));
  *sink = hn::GetLane(hn::SumOfLanes(d, sum));
  return hn::Lanes(d);
}

}  // namespace HWY_NAMESPACE
}  // namespace kvcheck::bench
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kvcheck::bench {

HWY_EXPORT(FmaChainsImpl);

double FmaPeakFlops() {
  constexpr int64_t kIterations = 4'000'000;  // ~0.1 s at 1 TFLOP/s-class rates per core
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    float sink = 0;
    const auto start = std::chrono::steady_clock::now();
    const size_t lanes = HWY_DYNAMIC_DISPATCH(FmaChainsImpl)(kIterations, &sink);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double flops = 2.0 * 12 * static_cast<double>(lanes) * kIterations;
    if (sink == 42.0f) best += 0;  // the sums are used
    best = std::max(best, flops / seconds);
  }
  return best;
}

}  // namespace kvcheck::bench
#endif  // HWY_ONCE
