#include "src/cache/prealloc_cache.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "src/base/check.h"
#include "src/base/status_macros.h"
#include "src/tensor/copy_ops.h"
#include "src/tensor/view_ops.h"

namespace kvcheck {

using cache_internal::AllocateBuffer;

absl::StatusOr<std::unique_ptr<KvCache>> PreallocCache::Create(const CacheConfig& config) {
  if (config.initial_capacity < 0 || config.initial_capacity > kMaxSequenceLength) {
    return absl::InvalidArgumentError(absl::StrCat("prealloc: initial capacity ",
                                                   config.initial_capacity, " is outside [0, ",
                                                   kMaxSequenceLength, "]"));
  }
  KV_ASSIGN_OR_RETURN(const int64_t budget, StorageBudget("prealloc", config));
  return std::unique_ptr<KvCache>(
      new PreallocCache(config.initial_capacity, budget));
}

std::unique_ptr<KvCache> PreallocCache::Fork() const {
  share_.MarkShared();  // both caches copy their buffers before their next write
  return std::unique_ptr<KvCache>(new PreallocCache(*this));
}

absl::Status PreallocCache::DoAppend(const Tensor& k, const Tensor& v,
                                     absl::Span<const bool> /*active: all rows*/) {
  const KvShape& shape = *this->shape();
  const int64_t length = seq_len();
  const int64_t needed = length + k.dim(2);  // <= 2 * kMaxSequenceLength: no overflow
  if (capacity_ > 0 && needed <= capacity_ && !share_.shared()) {
    // The common decode step: write in place, nothing to allocate or copy. Shapes were
    // validated by KvCache::AppendActive, so the copies cannot fail (and check that).
    buffers_.Write(k, v, length, needed);
    return absl::OkStatus();
  }
  // New buffers: first allocation, geometric growth, or copy-on-write after a Fork. The work
  // happens on locals; members change only once nothing can fail.
  const bool grow = capacity_ == 0 || needed > capacity_;
  int64_t capacity = capacity_;
  const int64_t slot_bytes = cache_internal::SlotBytes(shape);
  if (grow) {
    KV_ASSIGN_OR_RETURN(capacity,
                        cache_internal::GrownCapacity(name(), capacity_, initial_capacity_, needed,
                                                      slot_bytes, budget_));
  }
  CacheCounters counters = counters_;
  const int64_t dims[] = {shape.batch, shape.num_kv_heads, capacity, shape.head_dim};
  KV_ASSIGN_OR_RETURN(Tensor k_target, AllocateBuffer(shape.dtype, dims, counters));
  KV_ASSIGN_OR_RETURN(Tensor v_target, AllocateBuffer(shape.dtype, dims, counters));
  if (length > 0) {
    KV_ASSIGN_OR_RETURN(Tensor k_old, Narrow(buffers_.k(), 2, 0, length));
    KV_ASSIGN_OR_RETURN(Tensor v_old, Narrow(buffers_.v(), 2, 0, length));
    KV_RETURN_IF_ERROR(SliceSet(k_target, k_old, 2, 0));
    KV_RETURN_IF_ERROR(SliceSet(v_target, v_old, 2, 0));
    const int64_t copied = 2 * k_old.num_elements() * DTypeSize(shape.dtype);
    (grow ? counters.bytes_growth_copied : counters.bytes_other_copied) += copied;
  }
  cache_internal::CopyTokens(k, 0, k.dim(2), k_target, length);
  cache_internal::CopyTokens(v, 0, v.dim(2), v_target, length);
  share_.Clear();
  buffers_ = cache_internal::SlotBuffers(std::move(k_target), std::move(v_target));
  capacity_ = capacity;
  counters_ = counters;
  counters_.bytes_held = capacity * slot_bytes;
  return absl::OkStatus();
}

absl::StatusOr<CacheView> PreallocCache::DoView() const { return NewViewInto(); }

absl::Status PreallocCache::DoViewInto(CacheView& view) const {
  buffers_.ViewInto(seq_len(), view);
  return absl::OkStatus();
}

void PreallocCache::DoReset() {
  buffers_ = cache_internal::SlotBuffers();
  capacity_ = 0;
  counters_.bytes_held = 0;
  share_.Clear();
}

}  // namespace kvcheck
