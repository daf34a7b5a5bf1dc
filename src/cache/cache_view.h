// File: cache_view.h
// CacheView: what a cache append returns, the visible K and V with the position of every slot
// (kv_cache.h states the contract; slot_buffers.h writes one in place).
#ifndef KVCHECK_SRC_CACHE_CACHE_VIEW_H_
#define KVCHECK_SRC_CACHE_CACHE_VIEW_H_

#include <cstdint>
#include <vector>

#include "src/tensor/tensor.h"

namespace kvcheck {

// What an append returns.
struct CacheView {
  Tensor k;  // (B, KH, L, D)
  Tensor v;  // (B, KH, L, D)
  // (B, L) row-major: absolute position of slot j of batch row b; -1 marks an empty slot
  // (its K/V are meaningless and attention must skip it). Empty when slot j holds position j
  // in every row (no wrap, no per-row lengths): the common case costs no table, and attention
  // treats empty kv_positions the same way.
  std::vector<int64_t> positions;
  int64_t length() const { return k.rank() == 4 ? k.dim(2) : 0; }
  int64_t position(int64_t b, int64_t j) const {
    return positions.empty() ? j : positions[b * length() + j];
  }
};

}  // namespace kvcheck

#endif  // KVCHECK_SRC_CACHE_CACHE_VIEW_H_
