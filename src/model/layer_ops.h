// File: layer_ops.h
// The per-token building blocks of the decoders, on row-major f32 arrays: linear layers
// (OpenBLAS, with a plain loop beside it), LayerNorm, RMSNorm, GELU (Highway, with a scalar
// path beside it), SwiGLU and RoPE.
// All are written for `rows` independent rows; none allocates.
#ifndef KVCHECK_SRC_MODEL_LAYER_OPS_H_
#define KVCHECK_SRC_MODEL_LAYER_OPS_H_

#include <cstdint>

namespace kvcheck::model {

enum class MatmulPath {
  kOptimized,  // one row (decode): the Highway GEMV (gemv.h); more rows: OpenBLAS sgemm
  kPlain,      // a plain dot-product loop (double accumulation): the cross-check path
};

// y[r, n] = sum_k x[r, k] w[n, k] (+ bias[n]) for r < rows, n < out: w is [out, in].
// bias may be null. Up to GemvBatchLimit() rows (decode steps, short prefill chunks) run on
// our GEMV, more on OpenBLAS sgemm (single-threaded, on slices of the outputs); either way
// on num_threads of our threads, with the same bits for any num_threads. The sgemm path sets
// OpenBLAS to one thread for the call (process-wide, then restored): do not run it while
// another thread runs OpenBLAS threaded.
void Linear(const float* x, int64_t rows, int64_t in, const float* w, const float* bias,
            int64_t out, float* y, MatmulPath path, int num_threads = 1);

// Threads OpenBLAS may use (process-wide): the matmul + softmax attention kernels' sgemm.
void SetBlasThreads(int num_threads);

// y = (x - mean) / sqrt(var + eps) * weight + bias per row of `width` (biased variance).
void LayerNorm(const float* x, int64_t rows, int64_t width, const float* weight, const float* bias,
               float eps, float* y);
// y = x / sqrt(mean(x^2) + eps) * weight per row.
void RmsNorm(const float* x, int64_t rows, int64_t width, const float* weight, float eps, float* y);
// GPT-2's tanh GELU, in place: 0.5 x (1 + tanh(t)), t = sqrt(2/pi) (x + 0.044715 x^3).
// GeluInPlace: Highway vectors (dynamic dispatch); t is computed in f32 in the same order as
// GeluInPlaceScalar (std::tanh), so the two differ only by TanhInPlace's tanh, within 4 ulps
// of the exact tanh (reference/attention_bound.h's BoundModel::tanh_ulps), and its roundings
// after it. NaN stays NaN; +inf gives +inf, -inf NaN (-inf * (1 + tanh(-inf)) = -inf * 0),
// on both paths.
void GeluInPlace(float* x, int64_t count);
void GeluInPlaceScalar(float* x, int64_t count);
// tanh of every element (Highway), within 4 ulps of the exact value: GeluInPlace's tanh.
void TanhInPlace(float* x, int64_t count);
// gate[i] = silu(gate[i]) * up[i], in place on gate.
void SwiGluInPlace(float* gate, const float* up, int64_t count);
// Rotates the (i, i + D/2) pairs of every head of `rows` rows laid out [rows, heads, D] by
// angle position * theta^(-2i/D), position = first_position + row.
void ApplyRope(float* x, int64_t rows, int64_t heads, int64_t head_dim, int64_t first_position,
               float theta);

}  // namespace kvcheck::model

#endif  // KVCHECK_SRC_MODEL_LAYER_OPS_H_
