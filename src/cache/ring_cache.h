// File: ring_cache.h
// RingCache ("ring"): a sliding window of W tokens in a fixed (B, KH, W, D) buffer; the token
// at position p lives in slot p % W, so writes wrap around.
//
// - Visible set: the last min(n, W) tokens, exactly W once full, never W + 1.
// - Returned K/V are views of the buffer in slot order (after the ring wraps, slot order is
//   not position order); CacheView::positions says which position each slot holds.
// - An append of S >= W keeps the last W tokens of history + chunk (i.e. of the chunk).
// - The buffer is written in place, so a view returned earlier shows a slot's new token once
//   the ring passes it. Fork is copy-on-write, so one branch never changes the other's views.
#ifndef KVCHECK_SRC_CACHE_RING_CACHE_H_
#define KVCHECK_SRC_CACHE_RING_CACHE_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "src/cache/cache_buffers.h"
#include "src/cache/cache_config.h"
#include "src/cache/kv_cache.h"

namespace kvcheck {

class RingCache : public KvCache {
 public:
  // Errors: kInvalidArgument if config.window is not in [1, kMaxSequenceLength].
  static absl::StatusOr<std::unique_ptr<KvCache>> Create(const CacheConfig& config);

  const char* name() const override { return "ring"; }
  std::unique_ptr<KvCache> Fork() const override;
  int64_t capacity() const override { return buffers_.empty() ? 0 : window_; }
  int64_t window() const { return window_; }

 private:
  RingCache(int64_t window, int64_t budget) : window_(window), budget_(budget) {}
  RingCache(const RingCache&) = default;

  absl::Status DoAppend(const Tensor& k, const Tensor& v, absl::Span<const bool> active) override;
  absl::StatusOr<CacheView> DoView() const override;
  absl::Status DoViewInto(CacheView& view) const override;
  void DoReset() override;
  // Until the ring wraps (slot seq_len() < W, which KvCache checks): slot j holds position j.
  const cache_internal::SlotBuffers* InPlaceStepBuffers() const override {
    return buffers_.empty() || share_.shared() ? nullptr : &buffers_;
  }

  int64_t window_;
  int64_t budget_;                       // storage budget in bytes (CacheConfig::max_bytes)
  cache_internal::SlotBuffers buffers_;  // K and V, (B, KH, W, D) once allocated
  cache_internal::CopyOnWrite share_;
};

}  // namespace kvcheck

#endif  // KVCHECK_SRC_CACHE_RING_CACHE_H_
