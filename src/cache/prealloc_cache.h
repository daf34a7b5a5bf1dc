// File: prealloc_cache.h
// PreallocCache ("prealloc"): one (B, KH, capacity, D) buffer per K and V, allocated lazily
// on the first append (B, KH, D and dtype from the input), new tokens written in place at the
// current length, geometric growth, returned K/V are narrowed views of the buffers.
//
// - Growth: when length + S > capacity, the new capacity is max(length + S, 2 * capacity), so
//   bytes copied by growth stay below 2x the bytes appended. Capacity 0 is valid and grows.
// - Input with any strides is accepted (the write is a strided copy), including the
//   (B, S, KH, D).transpose(1, 2) views that a contiguity requirement would reject.
// - Fork is copy-on-write: both caches share the buffers until either appends.
// - Returned views show the buffer's rows [0, length): not contiguous unless the buffer is
//   exactly full or B == KH == 1 (candle's rule); unused capacity is never in a view.
#ifndef KVCHECK_SRC_CACHE_PREALLOC_CACHE_H_
#define KVCHECK_SRC_CACHE_PREALLOC_CACHE_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "src/cache/cache_buffers.h"
#include "src/cache/cache_config.h"
#include "src/cache/kv_cache.h"

namespace kvcheck {

class PreallocCache : public KvCache {
 public:
  // Errors: kInvalidArgument if config.initial_capacity < 0 or > kMaxSequenceLength.
  static absl::StatusOr<std::unique_ptr<KvCache>> Create(const CacheConfig& config);

  const char* name() const override { return "prealloc"; }
  std::unique_ptr<KvCache> Fork() const override;
  int64_t capacity() const override { return capacity_; }

 private:
  PreallocCache(int64_t initial_capacity, int64_t budget)
      : initial_capacity_(initial_capacity), budget_(budget) {}
  PreallocCache(const PreallocCache&) = default;

  absl::Status DoAppend(const Tensor& k, const Tensor& v, absl::Span<const bool> active) override;
  absl::StatusOr<CacheView> DoView() const override;
  absl::Status DoViewInto(CacheView& view) const override;
  void DoReset() override;
  const cache_internal::SlotBuffers* InPlaceStepBuffers() const override {
    return capacity_ > 0 && !share_.shared() ? &buffers_ : nullptr;
  }

  int64_t initial_capacity_;
  int64_t budget_;                       // storage budget in bytes (CacheConfig::max_bytes)
  int64_t capacity_ = 0;                 // slots in the buffers (0: not allocated)
  cache_internal::SlotBuffers buffers_;  // K and V, (B, KH, capacity, D) once allocated
  cache_internal::CopyOnWrite share_;
};

}  // namespace kvcheck

#endif  // KVCHECK_SRC_CACHE_PREALLOC_CACHE_H_
