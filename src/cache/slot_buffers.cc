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
namespace {

// The stride, in elements, between consecutive (b, h) rows of a (B, KH, ., D) layout with
// dimension strides `batch_stride` and `head_stride` when its B x KH rows lie at one stride
// in b-major order (row b * KH + h at that many strides), else -1. A dimension of size 1 may
// have any stride (even one that overflows when scaled to bytes), so its stride is never
// used.
int64_t UniformRowStride(int64_t batch, int64_t heads, int64_t batch_stride,
                         int64_t head_stride) {
  if (batch == 1) return heads == 1 ? 0 : head_stride;
  if (heads == 1) return batch_stride;
  int64_t product = 0;
  if (__builtin_mul_overflow(heads, head_stride, &product)) return -1;
  return product == batch_stride ? head_stride : -1;
}

}  // namespace

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
  const int64_t k_row = UniformRowStride(batch_, heads_, ks[0], ks[1]);
  const int64_t v_row = UniformRowStride(batch_, heads_, vs[0], vs[1]);
  k_row_ = k_row < 0 ? -1 : k_row * element_size_;
  v_row_ = v_row < 0 ? -1 : v_row * element_size_;
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
  if (k_row_ >= 0 && v_row_ >= 0 && k_span == v_span) {
    // Contiguous rows at one stride (WriteStep's common case): one loop over the B x KH rows
    // of both buffers.
    const int64_t rows = batch_ * heads_, k_row_stride = k_row_, v_row_stride = v_row_;
    for (int64_t i = 0; i < rows; ++i) {
      const std::byte* k_row = k_slot + i * k_row_stride;
      const std::byte* v_row = v_slot + i * v_row_stride;
      for (int64_t offset = 0; offset < k_span; offset += 64) {
        PrefetchStepLine(k_row + offset);
        PrefetchStepLine(v_row + offset);
      }
    }
    return;
  }
  for (int64_t b = 0; b < batch_; ++b) {
    for (int64_t h = 0; h < heads_; ++h) {
      const std::byte* k_row = k_slot + b * k_batch_ + h * k_head_;
      const std::byte* v_row = v_slot + b * v_batch_ + h * v_head_;
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
  const int64_t size = element_size_;
  const Dims& ks = k.strides();
  const Dims& vs = v.strides();
  const std::byte* const k_from = k.storage()->bytes() + k.layout().offset() * size;
  const std::byte* const v_from = v.storage()->bytes() + v.layout().offset() * size;
  std::byte* const k_to = k_base_ + slot * k_slot_;
  std::byte* const v_to = v_base_ + slot * v_slot_;
  if (next_slot >= 0 && next_slot < slots_) PrefetchRows(next_slot);
  const int64_t k_from_row = UniformRowStride(batch_, heads_, ks[0], ks[1]);
  const int64_t v_from_row = UniformRowStride(batch_, heads_, vs[0], vs[1]);
  if (k_row_ >= 0 && v_row_ >= 0 && k_from_row >= 0 && v_from_row >= 0) {
    // Rows at one stride in the buffers (every cache's when B = 1, and the contiguous ones'
    // for any B) and in the input (a contiguous one, or a transposed (B, 1, KH, D)): one
    // loop per buffer over the B x KH rows. Everything in locals, as memcpy may write
    // anywhere as far as the compiler knows (members would be re-read after every row); with
    // one loop instead of two nested ones they stay in registers across the calls. (Byte strides of rows that exist: they fit, as the tensors' storage
    // does.) Callgrind, prealloc's step in the append benchmark: 364 -> 299 instructions in
    // WriteStep beside the copies; alternating runs could not tell the time apart.
    const size_t row_bytes = static_cast<size_t>(row_bytes_);
    const int64_t rows = batch_ * heads_;
    const int64_t k_to_row = k_row_, k_from_step = k_from_row * size;
    for (int64_t i = 0; i < rows; ++i) {
      std::memcpy(k_to + i * k_to_row, k_from + i * k_from_step, row_bytes);
    }
    const int64_t v_to_row = v_row_, v_from_step = v_from_row * size;
    for (int64_t i = 0; i < rows; ++i) {
      std::memcpy(v_to + i * v_to_row, v_from + i * v_from_step, row_bytes);
    }
    return;
  }
  // Rows at two strides (B > 1 and KH > 1 here, so both strides are those of real rows).
  WriteRows(k_from, ks[0] * size, ks[1] * size, k_to, k_batch_, k_head_);
  WriteRows(v_from, vs[0] * size, vs[1] * size, v_to, v_batch_, v_head_);
}

void SlotBuffers::WriteRows(const std::byte* from, int64_t from_batch, int64_t from_head,
                            std::byte* to, int64_t to_batch, int64_t to_head) const {
  const size_t row_bytes = static_cast<size_t>(row_bytes_);
  const int64_t batch = batch_, heads = heads_;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      std::memcpy(to + b * to_batch + h * to_head, from + b * from_batch + h * from_head,
                  row_bytes);
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
  // Stores only what changed (Tensor::AssignNarrowed): when the view shows these buffers
  // already (the caller's view of the last append), the new length and the element counts.
  // No reference count is touched either: each count change is a locked instruction, which
  // also waits for the append's row stores to drain from the store buffer (copying and
  // dropping the view's two tensors cost 1.1-1.5 us per 30-layer step against a 2.7-4.0 us
  // floor in the append benchmark, 2-core Intel Xeon VM).
  view.k.AssignNarrowed(k_, 2, 0, length);
  view.v.AssignNarrowed(v_, 2, 0, length);
  if (!view.positions.empty()) view.positions.clear();
}

}  // namespace kvcheck::cache_internal
