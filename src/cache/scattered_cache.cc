#include "src/cache/scattered_cache.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "src/base/check.h"
#include "src/base/status_macros.h"
#include "src/tensor/view_ops.h"

namespace kvcheck {

using cache_internal::RingSlotPosition;
using cache_internal::WriteRingChunk;

absl::StatusOr<std::unique_ptr<KvCache>> ScatteredCache::Create(const CacheConfig& config) {
  if (config.window < 1 || config.window > kMaxSequenceLength) {
    return absl::InvalidArgumentError(absl::StrCat("scattered: context (window) ", config.window,
                                                   " is outside [1, ", kMaxSequenceLength, "]"));
  }
  KV_ASSIGN_OR_RETURN(const int64_t budget, StorageBudget("scattered", config));
  return std::unique_ptr<KvCache>(new ScatteredCache(config.window, budget));
}

std::unique_ptr<KvCache> ScatteredCache::Fork() const {
  share_.MarkShared();  // both caches copy their buffers before their next write
  return std::unique_ptr<KvCache>(new ScatteredCache(*this));
}

absl::Status ScatteredCache::DoAppend(const Tensor& k, const Tensor& v,
                                      absl::Span<const bool> active) {
  const KvShape& shape = *this->shape();
  if (buffers_.empty() || share_.shared()) {
    // First append, or copy-on-write after a Fork: new buffers, built on locals; the members
    // change only once nothing can fail, and the writes below cannot.
    CacheCounters counters = counters_;
    KV_ASSIGN_OR_RETURN(buffers_, cache_internal::NewWindowBuffers(name(), shape, window_, budget_,
                                                                   buffers_, counters));
    share_.Clear();
    counters_ = counters;
  }
  // Rows are disjoint slices of the buffer: write each active row into its own ring. Shapes
  // were validated, so neither the views nor the copies can fail. When every row is active
  // and as long as the others (a decode step of a whole batch), one write covers them all.
  bool together = true;
  for (int64_t b = 0; b < shape.batch; ++b) {
    together = together && (active.empty() || active[b]) && row_seq_len(b) == row_seq_len(0);
  }
  if (together) {  // as the ring cache's step, the next slot prefetched
    cache_internal::WriteRingStep(k, v, buffers_, row_seq_len(0), window_);
    return absl::OkStatus();
  }
  for (int64_t b = 0; b < shape.batch; ++b) {
    if (!active.empty() && !active[b]) continue;
    WriteRingChunk(buffers_.k().Narrowed(0, b, 1), k.Narrowed(0, b, 1), row_seq_len(b), window_);
    WriteRingChunk(buffers_.v().Narrowed(0, b, 1), v.Narrowed(0, b, 1), row_seq_len(b), window_);
  }
  return absl::OkStatus();
}

absl::StatusOr<CacheView> ScatteredCache::DoView() const { return NewViewInto(); }

absl::Status ScatteredCache::DoViewInto(CacheView& view) const {
  const int64_t batch = shape()->batch;
  int64_t visible = 0;
  bool same_lengths = true;
  for (int64_t b = 0; b < batch; ++b) {
    visible = std::max(visible, std::min(row_seq_len(b), window_));
    same_lengths = same_lengths && row_seq_len(b) == row_seq_len(0);
  }
  buffers_.ViewInto(visible, view);
  // Every row as long as the others and not wrapped: slot j holds position j everywhere, which
  // an empty table says (kv_cache.h) without a per-append O(length) table.
  if (same_lengths && row_seq_len(0) <= window_) return absl::OkStatus();
  std::vector<int64_t>& positions = view.positions;
  positions.assign(batch * visible, -1);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t length = row_seq_len(b);
    for (int64_t slot = 0; slot < std::min(length, window_); ++slot) {
      positions[b * visible + slot] =
          length < window_ ? slot : RingSlotPosition(slot, length, window_);
    }
  }
  return absl::OkStatus();
}

const cache_internal::SlotBuffers* ScatteredCache::InPlaceStepBuffers() const {
  if (buffers_.empty() || share_.shared()) return nullptr;
  for (int64_t length : row_lengths()) {
    if (length != row_lengths()[0]) return nullptr;
  }
  return &buffers_;
}

void ScatteredCache::DoReset() {
  buffers_ = cache_internal::SlotBuffers();
  counters_.bytes_held = 0;
  share_.Clear();
}

}  // namespace kvcheck
