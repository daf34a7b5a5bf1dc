#include "bench/read_bandwidth.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "src/base/check.h"
#include "src/base/large_buffer.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/read_bandwidth.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kvcheck::bench {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The wrapping sum of `v`'s lanes. Not SumOfLanes: for u64 on AVX3 that is GCC's
// _mm512_reduce_add_epi64, whose signed adds overflow (undefined; UBSan aborts) whenever the
// wrapping sum does, as it does for these sums of arbitrary words.
template <class D, class V>
uint64_t WrappingSumOfLanes(D d, V v) {
  HWY_ALIGN uint64_t lanes[HWY_MAX_BYTES / sizeof(uint64_t)];
  hn::Store(v, d, lanes);
  uint64_t sum = 0;
  for (size_t i = 0; i < hn::Lanes(d); ++i) sum += lanes[i];
  return sum;
}

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
  return WrappingSumOfLanes(d, sum);
}

// Sum of [base, base + count) read front to back, four accumulators.
uint64_t SumOneStreamImpl(const uint64_t* base, size_t count) {
  const hn::ScalableTag<uint64_t> d;
  const size_t N = hn::Lanes(d);
  auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  for (size_t i = 0; i + 4 * N <= count; i += 4 * N) {
    a0 = hn::Add(a0, hn::LoadU(d, base + i));
    a1 = hn::Add(a1, hn::LoadU(d, base + i + N));
    a2 = hn::Add(a2, hn::LoadU(d, base + i + 2 * N));
    a3 = hn::Add(a3, hn::LoadU(d, base + i + 3 * N));
  }
  return WrappingSumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)));
}

}  // namespace HWY_NAMESPACE
}  // namespace kvcheck::bench
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kvcheck::bench {

HWY_EXPORT(SumStreamsImpl);
HWY_EXPORT(SumOneStreamImpl);

namespace {

// One pass over the buffer by `threads` threads, each reading its share as 8 interleaved
// segments (or front to back); bytes per second.
double OnePass(const uint64_t* buffer, size_t words, int threads, bool interleaved) {
  std::atomic<uint64_t> sink{0};
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  size_t bytes_read = 0;
  for (int t = 0; t < threads; ++t) {
    const size_t begin = words * t / threads, end = words * (t + 1) / threads;
    // Segments a power of two apart (128 MiB for one thread) land on the same DRAM banks and
    // measured half the bandwidth of the same read skewed by a few cache lines (6.6-6.9 vs
    // 13-14 GB/s, one thread on the 2-core AMD EPYC VM): the skew keeps the floor a floor.
    const size_t segment = interleaved ? (end - begin) / 8 - 37 * 8 : end - begin;
    bytes_read += (interleaved ? 8 * segment : segment) * 8;
    pool.emplace_back([&, begin, segment] {
      sink += interleaved ? HWY_DYNAMIC_DISPATCH(SumStreamsImpl)(buffer + begin, segment)
                          : HWY_DYNAMIC_DISPATCH(SumOneStreamImpl)(buffer + begin, segment);
    });
  }
  for (std::thread& th : pool) th.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return sink.load() == 42 ? 0 : static_cast<double>(bytes_read) / seconds;  // the sums are used
}

}  // namespace

double ReadBandwidth(int threads) {
  const size_t words = (size_t{1} << 30) / 8;
  // On transparent huge pages where the kernel grants them, as the decoder's weights and the
  // caches' buffers are (src/base/large_buffer.h, advised before the first touch): 4 KiB
  // pages read about 10% slower here, and a limit measured on them would let the GEMV "beat"
  // it. Never freed: the buffer serves every call of the process.
  static uint64_t* buffer = [&] {
    auto* b = static_cast<uint64_t*>(AllocateLargeAware(words * 8));
    KV_CHECK(b != nullptr);
    for (size_t i = 0; i < words; ++i) b[i] = i * 0x9e3779b97f4a7c15ull;
    return b;
  }();
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    best = std::max({best, OnePass(buffer, words, threads, /*interleaved=*/true),
                     OnePass(buffer, words, threads, /*interleaved=*/false)});
  }
  return best;
}

}  // namespace kvcheck::bench
#endif  // HWY_ONCE
