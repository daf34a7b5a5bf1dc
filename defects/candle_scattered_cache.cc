#include "defects/candle_scattered_cache.h"

#include <algorithm>

#include "defects/buffer_bytes.h"
#include "src/base/status_macros.h"
#include "src/cache/cache_buffers.h"

namespace kvcheck::defects {

absl::StatusOr<std::unique_ptr<KvCache>> CandleScatteredCache::Create(const CacheConfig& config) {
  if (config.window < 1) return absl::InvalidArgumentError("candle scattered: context >= 1");
  return std::unique_ptr<KvCache>(new CandleScatteredCache(config.window));
}

std::unique_ptr<KvCache> CandleScatteredCache::Fork() const {
  auto fork = std::unique_ptr<CandleScatteredCache>(new CandleScatteredCache(*this));
  if (k_buffer_.rank() == 4) {
    fork->k_buffer_ = k_buffer_.DeepCopy();
    fork->v_buffer_ = v_buffer_.DeepCopy();
    CountForkCopy(fork->k_buffer_, fork->counters_);
    CountForkCopy(fork->v_buffer_, fork->counters_);
  }
  return fork;
}

absl::Status CandleScatteredCache::DoAppend(const Tensor& k, const Tensor& v,
                                            absl::Span<const bool> active) {
  const KvShape& shape = *this->shape();
  if (k_buffer_.rank() != 4) {
    const int64_t dims[] = {shape.batch, shape.num_kv_heads, context_, shape.head_dim};
    KV_ASSIGN_OR_RETURN(k_buffer_, Tensor::Zeros(shape.dtype, dims));
    KV_ASSIGN_OR_RETURN(v_buffer_, Tensor::Zeros(shape.dtype, dims));
    counters_.bytes_allocated += BufferBytes(k_buffer_) + BufferBytes(v_buffer_);
    counters_.bytes_held = 2 * k_buffer_.num_elements() * DTypeSize(shape.dtype);
  }
  // The defect: with S >= C nothing is written, yet the base class advances the rows.
  if (k.dim(2) >= context_) return absl::OkStatus();
  for (int64_t b = 0; b < shape.batch; ++b) {
    if (!active.empty() && !active[b]) continue;
    cache_internal::WriteRingChunk(k_buffer_.Narrowed(0, b, 1), k.Narrowed(0, b, 1),
                                   row_seq_len(b), context_);
    cache_internal::WriteRingChunk(v_buffer_.Narrowed(0, b, 1), v.Narrowed(0, b, 1),
                                   row_seq_len(b), context_);
  }
  return absl::OkStatus();
}

absl::StatusOr<CacheView> CandleScatteredCache::DoView() const {
  const int64_t batch = shape()->batch;
  int64_t visible = 0;
  for (int64_t b = 0; b < batch; ++b) visible = std::max(visible, std::min(row_seq_len(b), context_));
  CacheView view{k_buffer_.Narrowed(2, 0, visible), v_buffer_.Narrowed(2, 0, visible),
                 std::vector<int64_t>(batch * visible, -1)};
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t length = row_seq_len(b);
    for (int64_t slot = 0; slot < std::min(length, context_); ++slot) {
      view.positions[b * visible + slot] =
          length < context_ ? slot : cache_internal::RingSlotPosition(slot, length, context_);
    }
  }
  return view;
}

void CandleScatteredCache::DoReset() {
  k_buffer_ = v_buffer_ = Tensor();
  counters_.bytes_held = 0;
}

}  // namespace kvcheck::defects
