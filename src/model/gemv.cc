#include "src/model/gemv.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>

#include "src/base/thread_pool.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/model/gemv.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kvcheck::model {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Dot product of one row with x into y: lane-wise over k, then across lanes, then the tail.
// Every row's sum is computed in this order, alone or beside others (GemvSixRows), so a row's
// bits do not depend on how the rows were grouped or split over threads.
HWY_INLINE float RowTimesX(const float* row, const float* x, int64_t k_end, int64_t cols,
                           float lanes_sum) {
  for (int64_t t = k_end; t < cols; ++t) lanes_sum += row[t] * x[t];
  return lanes_sum;
}

void GemvOneRow(const float* w, const float* x, int64_t r, int64_t cols, float* y) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const float* row = w + r * cols;
  auto acc = hn::Zero(d);
  int64_t k = 0;
  for (; k + N <= cols; k += N) acc = hn::MulAdd(hn::LoadU(d, row + k), hn::LoadU(d, x + k), acc);
  y[r] = RowTimesX(row, x, k, cols, hn::GetLane(hn::SumOfLanes(d, acc)));
}

// Rows first + i * stride, i = 0..5, sharing each load of x. Six named accumulators, not an
// array: GCC kept an array of Highway vectors on the stack, and every multiply-add then
// waited on a store and a reload (the product ran at 13-16 GB/s instead of 21 in place).
void GemvSixRows(const float* w, const float* x, int64_t first, int64_t stride, int64_t cols,
                 float* y) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const float* r0 = w + first * cols;
  const float* r1 = r0 + stride * cols;
  const float* r2 = r1 + stride * cols;
  const float* r3 = r2 + stride * cols;
  const float* r4 = r3 + stride * cols;
  const float* r5 = r4 + stride * cols;
  auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d);
  auto a3 = hn::Zero(d), a4 = hn::Zero(d), a5 = hn::Zero(d);
  int64_t k = 0;
  for (; k + N <= cols; k += N) {
    const auto xv = hn::LoadU(d, x + k);
    a0 = hn::MulAdd(hn::LoadU(d, r0 + k), xv, a0);
    a1 = hn::MulAdd(hn::LoadU(d, r1 + k), xv, a1);
    a2 = hn::MulAdd(hn::LoadU(d, r2 + k), xv, a2);
    a3 = hn::MulAdd(hn::LoadU(d, r3 + k), xv, a3);
    a4 = hn::MulAdd(hn::LoadU(d, r4 + k), xv, a4);
    a5 = hn::MulAdd(hn::LoadU(d, r5 + k), xv, a5);
  }
  y[first] = RowTimesX(r0, x, k, cols, hn::GetLane(hn::SumOfLanes(d, a0)));
  y[first + stride] = RowTimesX(r1, x, k, cols, hn::GetLane(hn::SumOfLanes(d, a1)));
  y[first + 2 * stride] = RowTimesX(r2, x, k, cols, hn::GetLane(hn::SumOfLanes(d, a2)));
  y[first + 3 * stride] = RowTimesX(r3, x, k, cols, hn::GetLane(hn::SumOfLanes(d, a3)));
  y[first + 4 * stride] = RowTimesX(r4, x, k, cols, hn::GetLane(hn::SumOfLanes(d, a4)));
  y[first + 5 * stride] = RowTimesX(r5, x, k, cols, hn::GetLane(hn::SumOfLanes(d, a5)));
}

// Rows [begin, end) as six long streams: the range is cut in six parts and one row of each
// is computed at a time, so the core reads six far-apart regions front to back. The product
// is memory bound, and how it walks memory decides its speed: on a 50257 x 768 matrix, one
// core of the 2-core AMD EPYC development VM read 12-15 GB/s with four adjacent rows at a
// time (the hardware prefetcher restarts a short stream every 3 KB row), 15-20 with eight
// adjacent rows, 17-23 with six far-apart rows, against 24-26 GB/s for a plain sum of the
// same bytes as eight long streams (side by side in one microbenchmark, best of 15).
void GemvRowsImpl(const float* w, const float* x, int64_t begin, int64_t end, int64_t cols,
                  float* y) {
  const int64_t part = (end - begin) / 6;
  for (int64_t i = 0; i < part; ++i) GemvSixRows(w, x, begin + i, part, cols, y);
  for (int64_t r = begin + 6 * part; r < end; ++r) GemvOneRow(w, x, r, cols, y);
}

}  // namespace HWY_NAMESPACE
}  // namespace kvcheck::model
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kvcheck::model {

HWY_EXPORT(GemvRowsImpl);

void Gemv(const float* w, const float* x, int64_t rows, int64_t cols, float* y, int num_threads) {
  const int64_t parts = std::min<int64_t>(num_threads, std::max<int64_t>(1, rows / 64));
  if (parts <= 1) {
    HWY_DYNAMIC_DISPATCH(GemvRowsImpl)(w, x, 0, rows, cols, y);
    return;
  }
  // Several threads claim chunks of kChunkRows rows (each chunk six streams of 8 rows), not
  // one static range each: the threads' shares of the memory system differ from moment to
  // moment, and with static halves each of a decode step's 73 products ended when the slower
  // thread did. The step's products on the 2-core Intel Xeon (AVX-512) VM, two threads,
  // alternating runs (bench/gemv_benchmark): static halves 25.5-29.6 ms, chunks of 48 rows
  // 17.6-21.0 ms (12 rows: 20.0-22.7, 24: 18.6-22.3, 72: 19.6-23.9); one thread is the same
  // either way (31.9-33.6 ms), so it keeps the whole range.
  constexpr int64_t kChunkRows = 48;
  const int64_t chunks = (rows + kChunkRows - 1) / kChunkRows;
  SharedThreadPool(static_cast<int>(parts)).ParallelFor(chunks, [&](int64_t chunk) {
    const int64_t begin = chunk * kChunkRows;
    HWY_DYNAMIC_DISPATCH(GemvRowsImpl)(w, x, begin, std::min(rows, begin + kChunkRows), cols, y);
  });
}

void AdviseHugePages(const float* data, int64_t count) {
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(data + count) & ~(kHuge - 1);
  if (end <= begin) return;
  void* const start = reinterpret_cast<void*>(begin);
  // Already-touched pages are only collapsed by khugepaged, minutes later; MADV_COLLAPSE
  // (25, absent from older headers) does it now. Errors are ignored: this is advice.
  if (madvise(start, end - begin, MADV_HUGEPAGE) != 0) return;
  constexpr int kMadvCollapse = 25;
  (void)madvise(start, end - begin, kMadvCollapse);
}

void GemvScalar(const float* w, const float* x, int64_t rows, int64_t cols, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    float sum = 0;
    for (int64_t k = 0; k < cols; ++k) sum += w[r * cols + k] * x[k];
    y[r] = sum;
  }
}

}  // namespace kvcheck::model
#endif  // HWY_ONCE
