// File: scattered_cache.h
// ScatteredCache ("scattered"): batch rows advance independently. Each row is its own ring
// of W = config.window slots in a shared (B, KH, W, D) buffer; AppendActive takes one flag per
// row, and inactive rows neither write nor advance (continuous batching: sequences joining
// and leaving the batch).
//
// - Visible set per row: its last min(n_b, W) tokens, in slot order.
// - Returned K/V cover L = max_b min(n_b, W) slots; CacheView::positions gives each row's
//   slot positions, -1 for slots a row has not filled yet (attention skips them; in test
//   builds they hold NaN, so a kernel that does not skip them shows it).
// - An append of S >= W to a row keeps its last W tokens (the row's history is then only the
//   chunk's tail): the row never advances without writing.
// - Fork is copy-on-write.
#ifndef KVCHECK_SRC_CACHE_SCATTERED_CACHE_H_
#define KVCHECK_SRC_CACHE_SCATTERED_CACHE_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "src/cache/cache_buffers.h"
#include "src/cache/cache_config.h"
#include "src/cache/kv_cache.h"

namespace kvcheck {

class ScatteredCache : public KvCache {
 public:
  // Errors: kInvalidArgument if config.window is not in [1, kMaxSequenceLength].
  static absl::StatusOr<std::unique_ptr<KvCache>> Create(const CacheConfig& config);

  const char* name() const override { return "scattered"; }
  std::unique_ptr<KvCache> Fork() const override;
  int64_t capacity() const override { return buffers_.empty() ? 0 : window_; }
  bool supports_inactive_rows() const override { return true; }

 private:
  ScatteredCache(int64_t window, int64_t budget) : window_(window), budget_(budget) {}
  ScatteredCache(const ScatteredCache&) = default;

  absl::Status DoAppend(const Tensor& k, const Tensor& v, absl::Span<const bool> active) override;
  absl::StatusOr<CacheView> DoView() const override;
  absl::Status DoViewInto(CacheView& view) const override;
  void DoReset() override;
  // Every row as long as the others and not wrapped (slot seq_len() < W, which KvCache
  // checks): slot j holds position j in every row.
  const cache_internal::SlotBuffers* InPlaceStepBuffers() const override;

  int64_t window_;
  int64_t budget_;                       // storage budget in bytes (CacheConfig::max_bytes)
  cache_internal::SlotBuffers buffers_;  // K and V, (B, KH, W, D) once allocated
  cache_internal::CopyOnWrite share_;
};

}  // namespace kvcheck

#endif  // KVCHECK_SRC_CACHE_SCATTERED_CACHE_H_
