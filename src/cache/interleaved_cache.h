// File: interleaved_cache.h
// InterleavedCache ("interleaved"): one buffer per batch row, position-major, with K and V
// interleaved per KV head: element [b][pos][h][0, D) is K, [b][pos][h][D, 2D) is V. The fused
// CPU decode kernel streams it in one pass (InterleavedView).
//
// - Returned K and V are strided views into the one buffer (strides (Cap*KH*2D, 2D, KH*2D, 1),
//   V at offset D), so no copy is made per append.
// - Geometric growth from any initial capacity, including 0 (candle's raw interleaved cache
//   doubles 0 to 0 and writes out of range; this one grows to the needed size).
// - Fork is copy-on-write.
#ifndef KVCHECK_SRC_CACHE_INTERLEAVED_CACHE_H_
#define KVCHECK_SRC_CACHE_INTERLEAVED_CACHE_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "src/cache/cache_buffers.h"
#include "src/cache/cache_config.h"
#include "src/cache/kv_cache.h"

namespace kvcheck {

class InterleavedCache : public KvCache {
 public:
  // Errors: kInvalidArgument if config.initial_capacity < 0 or > kMaxSequenceLength.
  static absl::StatusOr<std::unique_ptr<KvCache>> Create(const CacheConfig& config);

  const char* name() const override { return "interleaved"; }
  std::unique_ptr<KvCache> Fork() const override;
  int64_t capacity() const override { return capacity_; }

  // The raw (B, length, KH, 2D) view of the buffer (rows [0, length)).
  // REQUIRES: shape() is set.
  Tensor InterleavedView() const;

 private:
  InterleavedCache(int64_t initial_capacity, int64_t budget)
      : initial_capacity_(initial_capacity), budget_(budget) {}
  InterleavedCache(const InterleavedCache&) = default;

  absl::Status DoAppend(const Tensor& k, const Tensor& v, absl::Span<const bool> active) override;
  absl::StatusOr<CacheView> DoView() const override;
  absl::Status DoViewInto(CacheView& view) const override;
  void DoReset() override;
  const cache_internal::SlotBuffers* InPlaceStepBuffers() const override {
    return capacity_ > 0 && !share_.shared() ? &halves_ : nullptr;
  }

  int64_t initial_capacity_;
  int64_t budget_;  // storage budget in bytes (CacheConfig::max_bytes)
  int64_t capacity_ = 0;
  Tensor buffer_;  // (B, capacity, KH, 2D)
  // InterleavedHalf(buffer_, false / true), made once per buffer: a decode step would
  // otherwise build both strided layouts twice (append and view) for a one-token write.
  cache_internal::SlotBuffers halves_;
  cache_internal::CopyOnWrite share_;
};

// K (is_value false) or V view of an interleaved buffer (B, L, KH, 2D), or of any strided
// view of one, as (B, KH, L, D).
// REQUIRES: rank 4 with an even last dimension.
Tensor InterleavedHalf(const Tensor& buffer, bool is_value);

}  // namespace kvcheck

#endif  // KVCHECK_SRC_CACHE_INTERLEAVED_CACHE_H_
