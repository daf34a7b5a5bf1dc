#include "src/model/gemv.h"

#include <algorithm>

#include "src/base/thread_pool.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/model/gemv.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kvcheck::model {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Rows [r, r + kRows): the rows share each load of x, and each row keeps its own accumulator,
// so a row's sum is the same (bit for bit) whatever kRows is: lane-wise over k, then across
// lanes, then the tail.
template <int kRows>
HWY_INLINE void GemvBlock(const float* w, const float* x, int64_t r, int64_t cols, float* y) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  using V = hn::Vec<decltype(d)>;
  V acc[kRows];
  for (int i = 0; i < kRows; ++i) acc[i] = hn::Zero(d);
  const float* w0 = w + r * cols;
  int64_t k = 0;
  for (; k + N <= cols; k += N) {
    const V xv = hn::LoadU(d, x + k);
    for (int i = 0; i < kRows; ++i) acc[i] = hn::MulAdd(hn::LoadU(d, w0 + i * cols + k), xv, acc[i]);
  }
  for (int i = 0; i < kRows; ++i) {
    float s = hn::GetLane(hn::SumOfLanes(d, acc[i]));
    for (int64_t t = k; t < cols; ++t) s += w0[i * cols + t] * x[t];
    y[r + i] = s;
  }
}

// Rows [begin, end), eight at a time. Eight rows in flight, not four: the product is
// memory bound, and one core keeps more of its bandwidth busy with more independent streams
// (a 50257 x 768 product measured 12-14 GB/s with four rows, 15-21 GB/s with eight, on the
// 2-core AMD EPYC development VM, where a plain 8-stream sum read 23-25 GB/s).
void GemvRowsImpl(const float* w, const float* x, int64_t begin, int64_t end, int64_t cols,
                  float* y) {
  int64_t r = begin;
  for (; r + 8 <= end; r += 8) GemvBlock<8>(w, x, r, cols, y);
  for (; r + 4 <= end; r += 4) GemvBlock<4>(w, x, r, cols, y);
  for (; r < end; ++r) GemvBlock<1>(w, x, r, cols, y);
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
  // Row ranges on multiples of 4, one per thread.
  SharedThreadPool(static_cast<int>(parts)).ParallelFor(parts, [&](int64_t part) {
    const int64_t begin = (rows * part / parts) & ~int64_t{3};
    const int64_t end = part + 1 == parts ? rows : (rows * (part + 1) / parts) & ~int64_t{3};
    HWY_DYNAMIC_DISPATCH(GemvRowsImpl)(w, x, begin, end, cols, y);
  });
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
