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
  const int64_t k_row = UniformRowStride(batch_, heads_, ks[0], ks[1]);
  const int64_t v_row = UniformRowStride(batch_, heads_, vs[0], vs[1]);
  k_row_ = k_row < 0 ? -1 : k_row * element_size_;
  v_row_ = v_row < 0 ? -1 : v_row * element_size_;
  // Each batch row's slot one block of 2 * KH rows, K's and V's of a head side by side (V
  // right after K, the heads at 2 * row_bytes_), the next slot's block right after it; in
  // one storage, with contiguous rows. Strides of size-1 dimensions are never used, as in
  // UniformRowStride.
  const bool heads_adjacent = heads_ == 1 || (k_head_ == 2 * row_bytes_ && v_head_ == k_head_);
  slots_one_run_ =
      rows_contiguous_ && k_.storage() == v_.storage() && v_base_ == k_base_ + row_bytes_ &&
      heads_adjacent &&
      (slots_ == 1 || (k_slot_ == v_slot_ && k_slot_ == 2 * heads_ * row_bytes_)) &&
      (batch_ == 1 || k_batch_ == v_batch_);
  prefetch_after_write_ = slots_one_run_ && PrefetchAfterOneRunPays();
}

bool PrefetchAfterOneRunPays() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool pays = [] {
    __builtin_cpu_init();
    return __builtin_cpu_is("amdfam17h") != 0;
  }();
  return pays;
#else
  return false;
#endif
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

}  // namespace kvcheck::cache_internal
