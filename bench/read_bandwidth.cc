#include "bench/read_bandwidth.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/read_bandwidth.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kvcheck::bench {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Sum of [base, base + 8 * segment) read as 8 interleaved streams.
uint64_t SumStreamsImpl(const uint64_t* base, size_t segment) {
  const hn::ScalableTag<uint64_t> d;
  const size_t N = hn::Lanes(d);
  auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  auto a4 = hn::Zero(d), a5 = hn::Zero(d), a6 = hn::Zero(d), a7 = hn::Zero(d);
  for (size_t i = 0; i + N <= segment; i += N) {
    a0 = hn::Add(a0, hn::LoadU(d, base + i));
    a1 = hn::Add(a1, hn::LoadU(d, base + segment + i));
    a2 = hn::Add(a2, hn::LoadU(d, base + 2 * segment + i));
    a3 = hn::Add(a3, hn::LoadU(d, base + 3 * segment + i));
    a4 = hn::Add(a4, hn::LoadU(d, base + 4 * segment + i));
    a5 = hn::Add(a5, hn::LoadU(d, base + 5 * segment + i));
    a6 = hn::Add(a6, hn::LoadU(d, base + 6 * segment + i));
    a7 = hn::Add(a7, hn::LoadU(d, base + 7 * segment + i));
  }
  const auto sum =
      hn::Add(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)), hn::Add(hn::Add(a4, a5), hn::Add(a6, a7)));
  return hn::GetLane(hn::SumOfLanes(d, sum));
}

}  // namespace HWY_NAMESPACE
}  // namespace kvcheck::bench
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kvcheck::bench {

HWY_EXPORT(SumStreamsImpl);

double ReadBandwidth(int threads) {
  const size_t words = (size_t{1} << 30) / 8;
  static std::vector<uint64_t>* buffer = [&] {
    auto* b = new std::vector<uint64_t>(words);
    for (size_t i = 0; i < words; ++i) (*b)[i] = i * 0x9e3779b97f4a7c15ull;
    return b;
  }();
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    std::atomic<uint64_t> sink{0};
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        const size_t begin = words * t / threads, end = words * (t + 1) / threads;
        sink += HWY_DYNAMIC_DISPATCH(SumStreamsImpl)(buffer->data() + begin, (end - begin) / 8);
      });
    }
    for (std::thread& th : pool) th.join();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, static_cast<double>(words * 8) / seconds);
    if (sink.load() == 42) best += 0;  // the sums are used
  }
  return best;
}

}  // namespace kvcheck::bench
#endif  // HWY_ONCE
