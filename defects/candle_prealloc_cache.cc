#include "defects/candle_prealloc_cache.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "defects/buffer_bytes.h"
#include "src/base/status_macros.h"
#include "src/tensor/copy_ops.h"
#include "src/tensor/view_ops.h"

namespace kvcheck::defects {
namespace {

const char* NameOf(PreallocDefect defect) {
  switch (defect) {
    case PreallocDefect::kCloneSharesBuffer:
      return "prealloc_clone_shares_buffer";
    case PreallocDefect::kRejectsNonContiguousPrefill:
      return "prealloc_rejects_noncontiguous_prefill";
    case PreallocDefect::kGrowsOnlyOnce:
      return "prealloc_grows_only_once";
    case PreallocDefect::kZeroCapacityNeverTerminates:
      return "prealloc_zero_capacity_loop";
    case PreallocDefect::kLinearGrowth:
      return "prealloc_linear_growth";
    case PreallocDefect::kResetKeepsStaleRows:
      return "prealloc_reset_keeps_stale_rows";
    case PreallocDefect::kHalvesOutOfStep:
      return "prealloc_k_then_v_fails";
  }
  return "?";
}

}  // namespace

absl::StatusOr<std::unique_ptr<KvCache>> CandlePreallocCache::Create(PreallocDefect defect,
                                                                     const CacheConfig& config) {
  if (config.initial_capacity < 0) {
    return absl::InvalidArgumentError("candle prealloc: negative capacity");
  }
  return std::unique_ptr<KvCache>(
      new CandlePreallocCache(defect, config.initial_capacity, NameOf(defect)));
}

std::unique_ptr<KvCache> CandlePreallocCache::Fork() const {
  // Every variant copies its buffer on Fork except the defect that does not (candle's Clone of
  // a non-empty Cache clones the Tensor handle, i.e. shares the storage).
  auto fork = std::unique_ptr<CandlePreallocCache>(new CandlePreallocCache(*this));
  if (defect_ != PreallocDefect::kCloneSharesBuffer && k_buffer_.rank() == 4) {
    fork->k_buffer_ = k_buffer_.DeepCopy();
    fork->v_buffer_ = v_buffer_.DeepCopy();
    CountForkCopy(fork->k_buffer_, fork->counters_);
    CountForkCopy(fork->v_buffer_, fork->counters_);
  }
  return fork;
}

absl::Status CandlePreallocCache::AppendHalf(Tensor& buffer, int64_t length, const Tensor& src) {
  const int64_t seq = src.dim(2);
  if (buffer.rank() != 4) {
    const int64_t dims[] = {src.dim(0), src.dim(1), std::max<int64_t>(capacity_, initial_capacity_),
                            src.dim(3)};
    KV_ASSIGN_OR_RETURN(buffer, Tensor::Zeros(src.dtype(), dims));
    counters_.bytes_allocated += BufferBytes(buffer);
    capacity_ = buffer.dim(2);
  }
  // candle grows by a fixed step: `while` (or `if`, before PR #3035) cur + n > max.
  int64_t steps = 0;
  while (length + seq > buffer.dim(2)) {
    // Each model keeps to its own defect: the fixed step of the linear and grow-once models
    // is at least 1, so that only prealloc_zero_capacity_loop hangs at capacity 0.
    int64_t grow_by = std::max<int64_t>(buffer.dim(2), 1);  // doubling otherwise
    if (defect_ == PreallocDefect::kZeroCapacityNeverTerminates) grow_by = initial_capacity_;
    if (defect_ == PreallocDefect::kLinearGrowth || defect_ == PreallocDefect::kGrowsOnlyOnce) {
      grow_by = std::max<int64_t>(initial_capacity_, 1);
    }
    if (++steps > kGrowthStepBudget) {
      return absl::DeadlineExceededError(absl::StrCat(
          name_, ": growth loop ran ", kGrowthStepBudget, " steps (grow_by ", grow_by, ")"));
    }
    if (grow_by == 0) continue;  // 0 + 0: the loop makes no progress
    const int64_t dims[] = {buffer.dim(0), buffer.dim(1), grow_by, buffer.dim(3)};
    KV_ASSIGN_OR_RETURN(Tensor extra, Tensor::Zeros(buffer.dtype(), dims));
    const int64_t copied = buffer.num_elements() * DTypeSize(buffer.dtype());
    KV_ASSIGN_OR_RETURN(buffer, Cat({buffer, extra}, 2));
    counters_.bytes_allocated += BufferBytes(extra) + BufferBytes(buffer);
    counters_.bytes_growth_copied += copied;
    capacity_ = buffer.dim(2);
    if (defect_ == PreallocDefect::kGrowsOnlyOnce) break;
  }
  if (defect_ == PreallocDefect::kRejectsNonContiguousPrefill ||
      defect_ == PreallocDefect::kHalvesOutOfStep) {
    if (!src.is_contiguous()) {
      return absl::InvalidArgumentError("slice-set only supports contiguous tensors");
    }
  }
  return SliceSet(buffer, src, 2, length);
}

absl::Status CandlePreallocCache::DoAppend(const Tensor& k, const Tensor& v,
                                           absl::Span<const bool> /*active*/) {
  // K first, then V, with no rollback: an error in V leaves K advanced.
  KV_RETURN_IF_ERROR(AppendHalf(k_buffer_, k_length_, k));
  k_length_ += k.dim(2);
  KV_RETURN_IF_ERROR(AppendHalf(v_buffer_, v_length_, v));
  v_length_ += v.dim(2);
  high_water_ = std::max(high_water_, k_length_);
  counters_.bytes_held =
      (k_buffer_.num_elements() + v_buffer_.num_elements()) * DTypeSize(k.dtype());
  return absl::OkStatus();
}

absl::StatusOr<CacheView> CandlePreallocCache::DoView() const {
  const int64_t length = defect_ == PreallocDefect::kResetKeepsStaleRows
                             ? std::min(high_water_, k_buffer_.dim(2))
                             : k_length_;
  CacheView view;
  view.k = k_buffer_.Narrowed(2, 0, std::min(length, k_buffer_.dim(2)));
  view.v = v_buffer_.Narrowed(2, 0, std::min(defect_ == PreallocDefect::kResetKeepsStaleRows
                                                 ? length
                                                 : v_length_,
                                             v_buffer_.dim(2)));
  return view;
}

void CandlePreallocCache::DoReset() {
  k_length_ = v_length_ = 0;
  if (defect_ == PreallocDefect::kResetKeepsStaleRows) return;  // buffers and views stay
  k_buffer_ = Tensor();
  v_buffer_ = Tensor();
  capacity_ = 0;
  high_water_ = 0;
  counters_.bytes_held = 0;
}

}  // namespace kvcheck::defects
