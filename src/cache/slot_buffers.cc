#include "src/cache/slot_buffers.h"

#include <cstring>
#include <utility>

#include "src/base/check.h"
#include "src/cache/copy_tokens.h"

// noipa is GCC's (clang keeps calls to a prefetching function and would warn of the
// unknown attribute).
#if defined(__GNUC__) && !defined(__clang__)
#define KVCHECK_OPAQUE_TO_IPA [[gnu::noipa]]
#else
#define KVCHECK_OPAQUE_TO_IPA
#endif

namespace kvcheck::cache_internal {

SlotBuffers::SlotBuffers(Tensor k_buffer, Tensor v_buffer)
    : k_(std::move(k_buffer)), v_(std::move(v_buffer)) {
  KV_CHECK(k_.rank() == 4 && v_.rank() == 4 && k_.dtype() == v_.dtype() &&
           k_.shape() == v_.shape());
  element_size_ = DTypeSize(k_.dtype());
  batch_ = k_.dim(0);
  heads_ = k_.dim(1);
  slots_ = k_.dim(2);
  head_dim_ = k_.dim(3);
  row_bytes_ = head_dim_ * element_size_;
  const Dims& ks = k_.strides();
  const Dims& vs = v_.strides();
  rows_contiguous_ = head_dim_ == 1 || (ks[3] == 1 && vs[3] == 1);
  k_base_ = k_.storage()->bytes() + k_.layout().offset() * element_size_;
  v_base_ = v_.storage()->bytes() + v_.layout().offset() * element_size_;
  k_batch_ = ks[0] * element_size_;
  k_head_ = ks[1] * element_size_;
  k_slot_ = ks[2] * element_size_;
  v_batch_ = vs[0] * element_size_;
  v_head_ = vs[1] * element_size_;
  v_slot_ = vs[2] * element_size_;
  // A row's bytes from its first element to its last, whatever the stride along D.
  k_row_span_ = ((head_dim_ - 1) * ks[3] + 1) * element_size_;
  v_row_span_ = ((head_dim_ - 1) * vs[3] + 1) * element_size_;
}

// One line of a row the next step writes, into the second-level cache for reading: the kind
// of prefetch is chosen here once (why this kind: PrefetchSlot in slot_buffers.h).
namespace {
[[gnu::always_inline]] inline void PrefetchStepLine(const std::byte* line) {
  __builtin_prefetch(line, /*rw=*/0, /*locality=*/2);
}
}  // namespace

// GCC 12 finds a function whose only effects are __builtin_prefetch "pure" and drops calls
// to it whose result (none) is unused: called out of line from WriteStep, this loop was
// never run (no prefetch instruction in WriteStep's code, and the step took twice the time
// of the benchmark's floor). So WriteStep inlines it, and PrefetchSlot is opaque to GCC's
// interprocedural analysis (noipa) for its callers in this file.
[[gnu::always_inline]] inline void SlotBuffers::PrefetchRows(int64_t slot) const {
  const int64_t k_span = k_row_span_, v_span = v_row_span_;
  const std::byte* const k_slot = k_base_ + slot * k_slot_;
  const std::byte* const v_slot = v_base_ + slot * v_slot_;
  for (int64_t b = 0; b < batch_; ++b) {
    for (int64_t h = 0; h < heads_; ++h) {
      const std::byte* k_row = k_slot + b * k_batch_ + h * k_head_;
      const std::byte* v_row = v_slot + b * v_batch_ + h * v_head_;
      if (k_span == v_span) {  // contiguous rows: one loop over both
        for (int64_t offset = 0; offset < k_span; offset += 64) {
          PrefetchStepLine(k_row + offset);
          PrefetchStepLine(v_row + offset);
        }
        continue;
      }
      for (int64_t offset = 0; offset < k_span; offset += 64) {
        PrefetchStepLine(k_row + offset);
      }
      for (int64_t offset = 0; offset < v_span; offset += 64) {
        PrefetchStepLine(v_row + offset);
      }
    }
  }
}

void SlotBuffers::WriteStep(const Tensor& k, const Tensor& v, int64_t slot,
                            int64_t next_slot) const {
  // Broken invariants only (the caller validated k and v against the cache's fixed shape,
  // and the buffers were made from it): a handful of compares.
  KV_CHECK(slot >= 0 && slot < slots_ && k.dim(0) == batch_ && k.dim(1) == heads_ &&
           k.dim(3) == head_dim_ && v.dim(0) == batch_ && v.dim(1) == heads_ &&
           v.dim(3) == head_dim_ && k.dtype() == k_.dtype() && v.dtype() == k_.dtype());
  // Everything the loops use in locals: memcpy may write anywhere as far as the compiler
  // knows, so members and strides read through the tensors would be read again after every
  // row.
  const int64_t size = element_size_;
  const size_t row_bytes = static_cast<size_t>(row_bytes_);
  const int64_t batch = batch_, heads = heads_;
  const Dims& ks = k.strides();
  const Dims& vs = v.strides();
  const int64_t k_from_batch = ks[0] * size, k_from_head = ks[1] * size;
  const int64_t v_from_batch = vs[0] * size, v_from_head = vs[1] * size;
  const std::byte* const k_from = k.storage()->bytes() + k.layout().offset() * size;
  const std::byte* const v_from = v.storage()->bytes() + v.layout().offset() * size;
  const int64_t k_to_batch = k_batch_, k_to_head = k_head_;
  const int64_t v_to_batch = v_batch_, v_to_head = v_head_;
  std::byte* const k_to = k_base_ + slot * k_slot_;
  std::byte* const v_to = v_base_ + slot * v_slot_;
  if (next_slot >= 0 && next_slot < slots_) PrefetchRows(next_slot);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      std::memcpy(k_to + b * k_to_batch + h * k_to_head,
                  k_from + b * k_from_batch + h * k_from_head, row_bytes);
    }
  }
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      std::memcpy(v_to + b * v_to_batch + h * v_to_head,
                  v_from + b * v_from_batch + h * v_from_head, row_bytes);
    }
  }
}

void SlotBuffers::Write(const Tensor& k, const Tensor& v, int64_t slot, int64_t next_slot) const {
  if (IsRowStep(k, v)) {
    WriteStep(k, v, slot, next_slot);
    return;
  }
  CopyTokens(k, 0, k.dim(2), k_, slot);
  CopyTokens(v, 0, v.dim(2), v_, slot);
  PrefetchSlot(next_slot);
}

KVCHECK_OPAQUE_TO_IPA void SlotBuffers::PrefetchSlot(int64_t slot) const {
  if (slot >= 0 && slot < slots_) PrefetchRows(slot);
}

void SlotBuffers::ViewInto(int64_t length, CacheView& view) const {
  // Copy assignment, not a new tensor: std::shared_ptr's assignment from a pointer to the same
  // control block leaves the count alone. Each count change is a locked instruction, which
  // also waits for the append's row stores to drain from the store buffer: in the append
  // benchmark, copying and dropping the view's two tensors cost 1.1-1.5 us per 30-layer step
  // against a 2.7-4.0 us floor (2-core Intel Xeon VM).
  view.k = k_;
  view.k.Narrow(2, 0, length);
  view.v = v_;
  view.v.Narrow(2, 0, length);
  view.positions.clear();
}

}  // namespace kvcheck::cache_internal
