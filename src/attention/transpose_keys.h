// File: transpose_keys.h
// The prefill driver's transpose of K (flash_attention.cc): a run of up to kMaxRunKeys key
// rows of one KV head written as columns of K^T, so that the score kernel
// (flash_prefill_tile-inl.h) reads a tile of keys as vectors along a row of K^T.
//
// TransposeKeys takes whole lane-count squares of it in vectors (Highway, dynamic dispatch:
// loads of rows, interleaves, block swaps, stores of columns) and the rest element by
// element; TransposeKeysScalar is the element-by-element reference beside it. Both write
// exactly out[d * out_stride + t] = rows[t][d] for t < count, d < head_dim, and nothing else.
#ifndef KVCHECK_SRC_ATTENTION_TRANSPOSE_KEYS_H_
#define KVCHECK_SRC_ATTENTION_TRANSPOSE_KEYS_H_

#include <cstdint>

namespace kvcheck::flash_internal {

// Keys per run: a cache line of f32 along each row of K^T.
inline constexpr int64_t kMaxRunKeys = 16;

// rows[t] (t < count <= kMaxRunKeys) points at key t's head_dim floats; `out` at K^T[0][first
// key of the run], row d of K^T `out_stride` floats after row d - 1. The rows and `out` must
// not overlap.
void TransposeKeys(const float* const* rows, int64_t count, int64_t head_dim, float* out,
                   int64_t out_stride);
void TransposeKeysScalar(const float* const* rows, int64_t count, int64_t head_dim, float* out,
                         int64_t out_stride);

}  // namespace kvcheck::flash_internal

#endif  // KVCHECK_SRC_ATTENTION_TRANSPOSE_KEYS_H_
