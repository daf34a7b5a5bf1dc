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

// Rows [begin, end): four rows at a time share each load of x.
void GemvRowsImpl(const float* w, const float* x, int64_t begin, int64_t end, int64_t cols,
                  float* y) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t r = begin;
  for (; r + 4 <= end; r += 4) {
    const float* w0 = w + r * cols;
    const float* w1 = w0 + cols;
    const float* w2 = w1 + cols;
    const float* w3 = w2 + cols;
    auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
    int64_t k = 0;
    for (; k + N <= cols; k += N) {
      const auto xv = hn::LoadU(d, x + k);
      a0 = hn::MulAdd(hn::LoadU(d, w0 + k), xv, a0);
      a1 = hn::MulAdd(hn::LoadU(d, w1 + k), xv, a1);
      a2 = hn::MulAdd(hn::LoadU(d, w2 + k), xv, a2);
      a3 = hn::MulAdd(hn::LoadU(d, w3 + k), xv, a3);
    }
    float s0 = hn::GetLane(hn::SumOfLanes(d, a0)), s1 = hn::GetLane(hn::SumOfLanes(d, a1));
    float s2 = hn::GetLane(hn::SumOfLanes(d, a2)), s3 = hn::GetLane(hn::SumOfLanes(d, a3));
    for (; k < cols; ++k) {
      s0 += w0[k] * x[k];
      s1 += w1[k] * x[k];
      s2 += w2[k] * x[k];
      s3 += w3[k] * x[k];
    }
    y[r] = s0;
    y[r + 1] = s1;
    y[r + 2] = s2;
    y[r + 3] = s3;
  }
  for (; r < end; ++r) {
    const float* wr = w + r * cols;
    auto a = hn::Zero(d);
    int64_t k = 0;
    for (; k + N <= cols; k += N) a = hn::MulAdd(hn::LoadU(d, wr + k), hn::LoadU(d, x + k), a);
    float s = hn::GetLane(hn::SumOfLanes(d, a));
    for (; k < cols; ++k) s += wr[k] * x[k];
    y[r] = s;
  }
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
