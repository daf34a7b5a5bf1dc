// File: copy_tokens.h
// CopyTokens: the strided copy of token rows between (B, KH, S, D) tensors that every cache
// strategy writes and gathers with.
#ifndef KVCHECK_SRC_CACHE_COPY_TOKENS_H_
#define KVCHECK_SRC_CACHE_COPY_TOKENS_H_

#include <cstdint>

#include "src/tensor/tensor.h"

namespace kvcheck::cache_internal {

// Copies tokens [src_first, src_first + count) of `src` (B, KH, S, D) into slots
// [dst_slot, dst_slot + count) of `dst` (B, KH, Cap, D), for every batch row and head: the
// append hot path, a memcpy per (row, head) run when the token rows are contiguous on both
// sides, element by element otherwise. Both may be views with any strides.
// REQUIRES: same dtype, equal B, KH and D, ranges within bounds (validated by the caller);
// src and dst do not overlap.
void CopyTokens(const Tensor& src, int64_t src_first, int64_t count, const Tensor& dst,
                int64_t dst_slot);

}  // namespace kvcheck::cache_internal

#endif  // KVCHECK_SRC_CACHE_COPY_TOKENS_H_
