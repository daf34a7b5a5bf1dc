#include "src/cache/ring_cache.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "src/base/check.h"
#include "src/base/status_macros.h"
#include "src/tensor/view_ops.h"

namespace kvcheck {

absl::StatusOr<std::unique_ptr<KvCache>> RingCache::Create(const CacheConfig& config) {
  if (config.window < 1 || config.window > kMaxSequenceLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("ring: window ", config.window, " is outside [1, ", kMaxSequenceLength, "]"));
  }
  KV_ASSIGN_OR_RETURN(const int64_t budget, StorageBudget("ring", config));
  return std::unique_ptr<KvCache>(new RingCache(config.window, budget));
}

std::unique_ptr<KvCache> RingCache::Fork() const {
  share_.MarkShared();  // both caches copy their buffers before their next write
  return std::unique_ptr<KvCache>(new RingCache(*this));
}

absl::Status RingCache::DoAppend(const Tensor& k, const Tensor& v,
                                 absl::Span<const bool> /*active: all rows*/) {
  if (buffers_.empty() || share_.shared()) {
    // First append, or copy-on-write after a Fork: new buffers, built on locals; the members
    // change only once nothing can fail, and the write below cannot.
    CacheCounters counters = counters_;
    KV_ASSIGN_OR_RETURN(buffers_, cache_internal::NewWindowBuffers(name(), *shape(), window_,
                                                                   budget_, buffers_, counters));
    share_.Clear();
    counters_ = counters;
  }
  // Written in place (validated shapes: the copies cannot fail), then the slot the next step
  // writes is fetched.
  cache_internal::WriteRingStep(k, v, buffers_, seq_len(), window_);
  return absl::OkStatus();
}

absl::StatusOr<CacheView> RingCache::DoView() const { return NewViewInto(); }

absl::Status RingCache::DoViewInto(CacheView& view) const {
  const int64_t length = seq_len();
  const int64_t visible = std::min(length, window_);
  buffers_.ViewInto(visible, view);
  if (length <= window_) return absl::OkStatus();  // not wrapped yet: slot j holds position j
  // Wrapped (visible == W): the oldest visible position, first = length - W, is in slot
  // first % W; the slots from there to the end hold first, first + 1, ..., and the slots
  // before it the positions after those (cache_internal::RingSlotPosition, without a modulo
  // per slot).
  const int64_t first = length - window_;
  const int64_t oldest_slot = first % window_;
  std::vector<int64_t>& positions = view.positions;
  positions.resize(shape()->batch * visible);
  for (int64_t b = 0; b < shape()->batch; ++b) {
    int64_t* row = positions.data() + b * visible;
    for (int64_t slot = 0; slot < visible; ++slot) {
      row[slot] = first + slot - oldest_slot + (slot < oldest_slot ? window_ : 0);
    }
  }
  return absl::OkStatus();
}

void RingCache::DoReset() {
  buffers_ = cache_internal::SlotBuffers();
  counters_.bytes_held = 0;
  share_.Clear();
}

}  // namespace kvcheck
