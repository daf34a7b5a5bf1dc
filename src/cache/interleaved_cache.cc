#include "src/cache/interleaved_cache.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "src/base/check.h"
#include "src/base/status_macros.h"
#include "src/tensor/copy_ops.h"
#include "src/tensor/view_ops.h"

namespace kvcheck {

using cache_internal::AllocateBuffer;

Tensor InterleavedHalf(const Tensor& buffer, bool is_value) {
  // (B, L, KH, 2D) -> (B, KH, L, D): swap the position and head dimensions, keep the first
  // (K) or second (V) half of the last; works on narrowed views of a buffer too.
  const int64_t head_dim = buffer.dim(3) / 2;
  const Dims& s = buffer.strides();
  const int64_t shape[] = {buffer.dim(0), buffer.dim(2), buffer.dim(1), head_dim};
  const int64_t strides[] = {s[0], s[2], s[1], s[3]};
  absl::StatusOr<Layout> layout =
      Layout::Strided(shape, strides, buffer.layout().offset() + (is_value ? head_dim * s[3] : 0));
  KV_CHECK(layout.ok());
  absl::StatusOr<Tensor> half = Tensor::View(buffer.storage(), *std::move(layout));
  KV_CHECK(half.ok());
  return *std::move(half);
}

absl::StatusOr<std::unique_ptr<KvCache>> InterleavedCache::Create(const CacheConfig& config) {
  if (config.initial_capacity < 0 || config.initial_capacity > kMaxSequenceLength) {
    return absl::InvalidArgumentError(absl::StrCat("interleaved: initial capacity ",
                                                   config.initial_capacity, " is outside [0, ",
                                                   kMaxSequenceLength, "]"));
  }
  KV_ASSIGN_OR_RETURN(const int64_t budget, StorageBudget("interleaved", config));
  return std::unique_ptr<KvCache>(
      new InterleavedCache(config.initial_capacity, budget));
}

std::unique_ptr<KvCache> InterleavedCache::Fork() const {
  share_.MarkShared();  // both caches copy their buffers before their next write
  return std::unique_ptr<KvCache>(new InterleavedCache(*this));
}

absl::Status InterleavedCache::DoAppend(const Tensor& k, const Tensor& v,
                                        absl::Span<const bool> /*active: all rows*/) {
  const KvShape& shape = *this->shape();
  const int64_t length = seq_len();
  const int64_t needed = length + k.dim(2);
  if (capacity_ > 0 && needed <= capacity_ && !share_.shared()) {
    // The common step: write in place (validated shapes: the copies cannot fail), then start
    // fetching the position row the next step writes.
    halves_.Write(k, v, length, needed);
    return absl::OkStatus();
  }
  Tensor target = buffer_;
  int64_t capacity = capacity_;
  CacheCounters counters = counters_;
  const bool grow = capacity_ == 0 || needed > capacity_;
  const int64_t slot_bytes = cache_internal::SlotBytes(shape);
  if (grow || share_.shared()) {
    if (grow) {
      KV_ASSIGN_OR_RETURN(
          capacity, cache_internal::GrownCapacity(name(), capacity_, initial_capacity_, needed,
                                                  slot_bytes, budget_));
    }
    const int64_t dims[] = {shape.batch, capacity, shape.num_kv_heads, 2 * shape.head_dim};
    KV_ASSIGN_OR_RETURN(target, AllocateBuffer(shape.dtype, dims, counters));
    if (length > 0) {
      KV_ASSIGN_OR_RETURN(Tensor old_rows, Narrow(buffer_, 1, 0, length));
      KV_RETURN_IF_ERROR(SliceSet(target, old_rows, 1, 0));
      const int64_t copied = old_rows.num_elements() * DTypeSize(shape.dtype);
      (grow ? counters.bytes_growth_copied : counters.bytes_other_copied) += copied;
    }
  }
  // Validated shapes: the copies cannot fail (CopyTokens checks), so K and V stay in step.
  Tensor k_half = InterleavedHalf(target, /*is_value=*/false);
  Tensor v_half = InterleavedHalf(target, /*is_value=*/true);
  cache_internal::CopyTokens(k, 0, k.dim(2), k_half, length);
  cache_internal::CopyTokens(v, 0, v.dim(2), v_half, length);
  if (!target.SharesStorageWith(buffer_)) share_.Clear();
  buffer_ = std::move(target);
  halves_ = cache_internal::SlotBuffers(std::move(k_half), std::move(v_half));
  capacity_ = capacity;
  counters_ = counters;
  counters_.bytes_held = capacity * slot_bytes;
  return absl::OkStatus();
}

absl::StatusOr<CacheView> InterleavedCache::DoView() const { return NewViewInto(); }

absl::Status InterleavedCache::DoViewInto(CacheView& view) const {
  if (buffer_.rank() != 4) {
    view = CacheView{};
  } else {
    halves_.ViewInto(seq_len(), view);
  }
  return absl::OkStatus();
}

Tensor InterleavedCache::InterleavedView() const { return buffer_.Narrowed(1, 0, seq_len()); }

void InterleavedCache::DoReset() {
  buffer_ = Tensor();
  halves_ = cache_internal::SlotBuffers();
  capacity_ = 0;
  counters_.bytes_held = 0;
  share_.Clear();
}

}  // namespace kvcheck
