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

float InterleavedStreamingSumImpl(const float* p, int64_t n) {
  const hn::ScalableTag<float> df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  // 37 cache lines of skew, as read_bandwidth.cc's segments have.
  constexpr int64_t kSkewFloats = 37 * 16;
  if (n < 64 * 1024) return StreamingSumImpl(p, n);
  const int64_t segment = (n / 8 - kSkewFloats) / N * N;
  auto a0 = hn::Zero(df), a1 = hn::Zero(df), a2 = hn::Zero(df), a3 = hn::Zero(df);
  auto a4 = hn::Zero(df), a5 = hn::Zero(df), a6 = hn::Zero(df), a7 = hn::Zero(df);
  for (int64_t i = 0; i < segment; i += N) {
    a0 = hn::Add(a0, hn::LoadU(df, p + i));
    a1 = hn::Add(a1, hn::LoadU(df, p + segment + i));
    a2 = hn::Add(a2, hn::LoadU(df, p + 2 * segment + i));
    a3 = hn::Add(a3, hn::LoadU(df, p + 3 * segment + i));
    a4 = hn::Add(a4, hn::LoadU(df, p + 4 * segment + i));
    a5 = hn::Add(a5, hn::LoadU(df, p + 5 * segment + i));
    a6 = hn::Add(a6, hn::LoadU(df, p + 6 * segment + i));
    a7 = hn::Add(a7, hn::LoadU(df, p + 7 * segment + i));
  }
  const auto sum =
      hn::Add(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)), hn::Add(hn::Add(a4, a5), hn::Add(a6, a7)));
  return hn::GetLane(hn::SumOfLanes(df, sum)) + StreamingSumImpl(p + 8 * segment, n - 8 * segment);
}

}  // namespace HWY_NAMESPACE
}  // namespace kvcheck::bench
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kvcheck::bench {

HWY_EXPORT(StreamingSumImpl);
HWY_EXPORT(InterleavedStreamingSumImpl);

float StreamingSum(const float* p, int64_t n) {
  return HWY_DYNAMIC_DISPATCH(StreamingSumImpl)(p, n);
}

float InterleavedStreamingSum(const float* p, int64_t n) {
  return HWY_DYNAMIC_DISPATCH(InterleavedStreamingSumImpl)(p, n);
}

}  // namespace kvcheck::bench
#endif  // HWY_ONCE
