#include "src/model/layer_ops.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>

#include "src/base/thread_pool.h"
#include "src/model/gemv.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/model/layer_ops.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvcheck::model {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// tanh of every element: Highway's Tanh (tanh|x| = m / (m + 2), m = expm1(2|x|), 1 past
// |x| = 18.7, the sign put back), within 4 ulps over the whole float range (layer_ops_test.cc
// sweeps it against double tanh); NaN stays NaN, +-inf gives +-1.
void TanhInPlaceImpl(float* x, int64_t count) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + N <= count; i += N) hn::StoreU(hn::Tanh(d, hn::LoadU(d, x + i)), d, x + i);
  if (i < count) {
    // The tail through a zero-padded vector: no scalar function, so every element of the
    // array gets the same tanh.
    HWY_ALIGN float tail[hn::MaxLanes(d)] = {};
    for (int64_t j = i; j < count; ++j) tail[j - i] = x[j];
    hn::Store(hn::Tanh(d, hn::Load(d, tail)), d, tail);
    for (int64_t j = i; j < count; ++j) x[j] = tail[j - i];
  }
}

// 0.5 v (1 + tanh(t)), t = sqrt(2/pi) (v + 0.044715 v^3), the operations in GeluInPlaceScalar's
// order and without fused multiply-adds, so t has the same bits on both paths and only tanh
// differs (within its 4 ulps).
HWY_INLINE hn::Vec<hn::ScalableTag<float>> GeluVector(hn::ScalableTag<float> d,
                                                      hn::Vec<hn::ScalableTag<float>> v) {
  const auto k = hn::Set(d, std::sqrt(2.0f / static_cast<float>(M_PI)));
  const auto cubic = hn::Mul(hn::Mul(hn::Mul(hn::Set(d, 0.044715f), v), v), v);
  const auto t = hn::Mul(k, hn::Add(v, cubic));
  return hn::Mul(hn::Mul(hn::Set(d, 0.5f), v), hn::Add(hn::Set(d, 1.0f), hn::Tanh(d, t)));
}

void GeluInPlaceImpl(float* x, int64_t count) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + N <= count; i += N) hn::StoreU(GeluVector(d, hn::LoadU(d, x + i)), d, x + i);
  if (i < count) {
    HWY_ALIGN float tail[hn::MaxLanes(d)] = {};
    for (int64_t j = i; j < count; ++j) tail[j - i] = x[j];
    hn::Store(GeluVector(d, hn::Load(d, tail)), d, tail);
    for (int64_t j = i; j < count; ++j) x[j] = tail[j - i];
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kvcheck::model
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kvcheck::model {

HWY_EXPORT(TanhInPlaceImpl);
HWY_EXPORT(GeluInPlaceImpl);

namespace {

// y = x w^T for rows > GemvBatchLimit(): OpenBLAS sgemm, single-threaded, on slices of
// kSliceOutputs outputs that our threads claim. With OpenBLAS's own threads, its second thread
// spun in sched_yield for 0.1-0.2 s after each call (2^28 TSC ticks), taking a core from the
// decode steps that follow (perf, a 48-token prompt then 24 tokens on two threads: 130 000
// sched_yield calls during the generation before, none now). The slices do not depend on the
// thread count, and an output's bits depend on the call it is in (OpenBLAS picks kernels and
// blocking by the call's sizes), so the result is the same on any number of threads. The
// chunk's products alone (bench/gemv_benchmark BM_ChunkStep, Zen 4 VM, medians of 5), against
// OpenBLAS on its own threads: two threads, 128 rows 196 against 190 ms, 33 rows 76.8 against
// 83.5; one thread, 378 against 376 and 144 against 160. Slices of 256 outputs left two
// threads unbalanced on the 768-output products (225 and 95.3 ms); slices of 64 were no
// better than 128.
void SgemmOnSlices(const float* x, int64_t rows, int64_t in, const float* w, int64_t out, float* y,
                   int num_threads) {
  constexpr int64_t kSliceOutputs = 128;
  const int m = static_cast<int>(rows), k = static_cast<int>(in), ldc = static_cast<int>(out);
  const int64_t slices = (out + kSliceOutputs - 1) / kSliceOutputs;
  // Process-wide: a caller of OpenBLAS on another thread meanwhile runs single-threaded too.
  const int blas_threads = openblas_get_num_threads();
  openblas_set_num_threads(1);
  SharedThreadPool(num_threads).ParallelFor(slices, [&](int64_t slice) {
    const int64_t begin = slice * kSliceOutputs;
    const int slice_outputs = static_cast<int>(std::min(kSliceOutputs, out - begin));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, slice_outputs, k, 1.0f, x, k,
                w + begin * in, k, 0.0f, y + begin, ldc);
  });
  openblas_set_num_threads(blas_threads);
}

}  // namespace

void Linear(const float* x, int64_t rows, int64_t in, const float* w, const float* bias,
            int64_t out, float* y, MatmulPath path, int num_threads) {
  if (rows <= 0) return;
  if (path == MatmulPath::kPlain) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t n = 0; n < out; ++n) {
        double sum = bias != nullptr ? bias[n] : 0.0;
        for (int64_t k = 0; k < in; ++k) sum += double{x[r * in + k]} * w[n * in + k];
        y[r * out + n] = static_cast<float>(sum);
      }
    }
    return;
  }
  if (rows <= GemvBatchLimit()) {
    // Decode steps and short prefill chunks: our GEMV streams the weights once for all rows.
    // Debian's OpenBLAS 0.3.21 sgemm is slower at these shapes (bench/gemv_benchmark
    // BM_ChunkStep, the 124M model's 73 products, one thread, Zen 4 VM, AVX-512: 4 rows 28.5
    // against 82.3 ms, 8 rows 41.5 against 89.4, 32 rows 120 against 149; even at 64 rows,
    // 220 against 225; 128 rows 426 against 373; the AVX2 target's limit is lower, see
    // GemvBatchLimit), and leaves no OpenBLAS thread spinning (SgemmOnSlices).
    GemvBatch(w, x, rows, out, in, y, num_threads, bias);  // each output + its bias, in place
    return;
  }
  SgemmOnSlices(x, rows, in, w, out, y, num_threads);
  if (bias != nullptr) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t n = 0; n < out; ++n) y[r * out + n] += bias[n];
    }
  }
}

void SetBlasThreads(int num_threads) { openblas_set_num_threads(num_threads); }

namespace {

// sum over i < n of term(i), in double, as four interleaved partial sums added at the end:
// one running sum made each add wait on the last (4 cycles a term), and a decode step's 25
// norms of 768 values then held about 0.5% of a two-thread step's time on the calling
// thread while the other waited (perf, Zen 4 VM, 2026-12-05).
template <typename Term>
double SumInFourChains(int64_t n, const Term& term) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += term(i);
    s1 += term(i + 1);
    s2 += term(i + 2);
    s3 += term(i + 3);
  }
  for (; i < n; ++i) s0 += term(i);
  return (s0 + s1) + (s2 + s3);
}

}  // namespace

void LayerNorm(const float* x, int64_t rows, int64_t width, const float* weight, const float* bias,
               float eps, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * width;
    double mean = SumInFourChains(width, [&](int64_t i) { return double{row[i]}; });
    mean /= static_cast<double>(width);
    double var =
        SumInFourChains(width, [&](int64_t i) { return (row[i] - mean) * (row[i] - mean); });
    var /= static_cast<double>(width);
    const double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t i = 0; i < width; ++i) {
      y[r * width + i] = static_cast<float>((row[i] - mean) * inv * weight[i] +
                                            (bias != nullptr ? bias[i] : 0.0f));
    }
  }
}

void RmsNorm(const float* x, int64_t rows, int64_t width, const float* weight, float eps,
             float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * width;
    const double sum_sq =
        SumInFourChains(width, [&](int64_t i) { return double{row[i]} * row[i]; });
    const double inv = 1.0 / std::sqrt(sum_sq / static_cast<double>(width) + eps);
    for (int64_t i = 0; i < width; ++i) {
      y[r * width + i] = static_cast<float>(row[i] * inv * weight[i]);
    }
  }
}

void GeluInPlace(float* x, int64_t count) { HWY_DYNAMIC_DISPATCH(GeluInPlaceImpl)(x, count); }

void GeluInPlaceScalar(float* x, int64_t count) {
  const float k = std::sqrt(2.0f / static_cast<float>(M_PI));
  for (int64_t i = 0; i < count; ++i) {
    const float v = x[i];
    x[i] = 0.5f * v * (1.0f + std::tanh(k * (v + 0.044715f * v * v * v)));
  }
}

void TanhInPlace(float* x, int64_t count) { HWY_DYNAMIC_DISPATCH(TanhInPlaceImpl)(x, count); }

void SwiGluInPlace(float* gate, const float* up, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void ApplyRope(float* x, int64_t rows, int64_t heads, int64_t head_dim, int64_t first_position,
               float theta) {
  const int64_t half = head_dim / 2;
  for (int64_t r = 0; r < rows; ++r) {
    const double position = static_cast<double>(first_position + r);
    for (int64_t i = 0; i < half; ++i) {
      // Angles in double: positions up to the context length keep full f32 accuracy.
      const double angle =
          position * std::pow(static_cast<double>(theta),
                              -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
      const float c = static_cast<float>(std::cos(angle)), s = static_cast<float>(std::sin(angle));
      for (int64_t h = 0; h < heads; ++h) {
        float* v = x + (r * heads + h) * head_dim;
        const float a = v[i], b = v[i + half];
        v[i] = a * c - b * s;
        v[i + half] = a * s + b * c;
      }
    }
  }
}

}  // namespace kvcheck::model
#endif  // HWY_ONCE
