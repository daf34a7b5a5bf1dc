#include "bench/streaming_sum.h"

#include <cstddef>
#include <cstdint>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/streaming_sum.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kvcheck::bench {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

float StreamingSumImpl(const float* p, int64_t n) {
  const hn::ScalableTag<float> df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  auto a0 = hn::Zero(df), a1 = hn::Zero(df), a2 = hn::Zero(df), a3 = hn::Zero(df);
  int64_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    a0 = hn::Add(a0, hn::LoadU(df, p + i));
    a1 = hn::Add(a1, hn::LoadU(df, p + i + N));
    a2 = hn::Add(a2, hn::LoadU(df, p + i + 2 * N));
    a3 = hn::Add(a3, hn::LoadU(df, p + i + 3 * N));
  }
  float tail = 0;
  for (; i < n; ++i) tail += p[i];
  return hn::GetLane(hn::SumOfLanes(df, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)))) + tail;
}

}  // namespace HWY_NAMESPACE
}  // namespace kvcheck::bench
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kvcheck::bench {

HWY_EXPORT(StreamingSumImpl);

float StreamingSum(const float* p, int64_t n) {
  return HWY_DYNAMIC_DISPATCH(StreamingSumImpl)(p, n);
}

}  // namespace kvcheck::bench
#endif  // HWY_ONCE
