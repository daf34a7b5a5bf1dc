#include "defects/candle_ring_cache.h"

#include <algorithm>

#include "defects/buffer_bytes.h"
#include "src/base/status_macros.h"
#include "src/tensor/copy_ops.h"

namespace kvcheck::defects {

absl::StatusOr<std::unique_ptr<KvCache>> CandleRingCache::Create(RingDefect defect,
                                                                 const CacheConfig& config) {
  if (config.window < 1) return absl::InvalidArgumentError("candle ring: window must be >= 1");
  return std::unique_ptr<KvCache>(new CandleRingCache(defect, config.window));
}

const char* CandleRingCache::name() const {
  return defect_ == RingDefect::kPositionsRotatedForFullChunk ? "ring_positions_wrong_at_n_eq_w"
                                                              : "ring_chunk_returns_chunk_only";
}

CandleRingCache::CandleRingCache(const CandleRingCache& other) = default;

std::unique_ptr<KvCache> CandleRingCache::Fork() const {
  auto fork = std::unique_ptr<CandleRingCache>(new CandleRingCache(*this));
  if (k_buffer_.rank() == 4) {  // not the defect under test: forks do not share the ring
    fork->k_buffer_ = k_buffer_.DeepCopy();
    fork->v_buffer_ = v_buffer_.DeepCopy();
    CountForkCopy(fork->k_buffer_, fork->counters_);
    CountForkCopy(fork->v_buffer_, fork->counters_);
  }
  return fork;
}

absl::Status CandleRingCache::DoAppend(const Tensor& k, const Tensor& v,
                                       absl::Span<const bool> /*active*/) {
  const KvShape& shape = *this->shape();
  const int64_t W = window_, seq = k.dim(2), current = seq_len();
  if (k_buffer_.rank() != 4) {
    const int64_t dims[] = {shape.batch, shape.num_kv_heads, W, shape.head_dim};
    KV_ASSIGN_OR_RETURN(k_buffer_, Tensor::Zeros(shape.dtype, dims));
    KV_ASSIGN_OR_RETURN(v_buffer_, Tensor::Zeros(shape.dtype, dims));
    counters_.bytes_allocated += BufferBytes(k_buffer_) + BufferBytes(v_buffer_);
  }
  k_chunk_ = Tensor();
  v_chunk_ = Tensor();
  counters_.bytes_held = 2 * k_buffer_.num_elements() * DTypeSize(shape.dtype);
  const int64_t total = current + seq;
  if (seq >= W) {
    // candle: the chunk's last W rows go to slots 0..W-1 in time order, offset = 0.
    KV_RETURN_IF_ERROR(SliceSet(k_buffer_, k.Narrowed(2, seq - W, W), 2, 0));
    KV_RETURN_IF_ERROR(SliceSet(v_buffer_, v.Narrowed(2, seq - W, W), 2, 0));
    reported_positions_.clear();
    if (defect_ == RingDefect::kChunkReturnsChunkOnly) {
      // ... and returns the chunk itself, all S tokens.
      k_chunk_ = k.DeepCopy();
      v_chunk_ = v.DeepCopy();
      for (int64_t j = 0; j < seq; ++j) reported_positions_.push_back(current + j);
    } else {
      // ... while positions(n) for n == W used the rotated formula with the old offset.
      const int64_t u = (offset_ + seq) % W;
      for (int64_t i = 0; i < W; ++i) {
        reported_positions_.push_back(i < u ? total + i - u : total + i - u - W);
      }
    }
    offset_ = 0;
    return absl::OkStatus();
  }
  // S < W: write at the offset, wrapping once (candle's two slice_sets).
  const int64_t first = std::min(seq, W - offset_);
  KV_RETURN_IF_ERROR(SliceSet(k_buffer_, k.Narrowed(2, 0, first), 2, offset_));
  KV_RETURN_IF_ERROR(SliceSet(v_buffer_, v.Narrowed(2, 0, first), 2, offset_));
  if (seq > first) {
    KV_RETURN_IF_ERROR(SliceSet(k_buffer_, k.Narrowed(2, first, seq - first), 2, 0));
    KV_RETURN_IF_ERROR(SliceSet(v_buffer_, v.Narrowed(2, first, seq - first), 2, 0));
  }
  offset_ = (offset_ + seq) % W;
  // Slot i holds the token written there last: walk back from the offset.
  reported_positions_.assign(std::min(total, W), 0);
  for (int64_t i = 0; i < static_cast<int64_t>(reported_positions_.size()); ++i) {
    const int64_t back = (offset_ - 1 - i + 2 * W) % W;  // slots written most recently first
    reported_positions_[back] = total - 1 - i;
  }
  return absl::OkStatus();
}

absl::StatusOr<CacheView> CandleRingCache::DoView() const {
  CacheView view;
  if (k_chunk_.rank() == 4) {
    view.k = k_chunk_;
    view.v = v_chunk_;
  } else {
    const int64_t visible = static_cast<int64_t>(reported_positions_.size());
    view.k = k_buffer_.Narrowed(2, 0, std::min(visible, window_));
    view.v = v_buffer_.Narrowed(2, 0, std::min(visible, window_));
  }
  for (int64_t b = 0; b < shape()->batch; ++b) {
    view.positions.insert(view.positions.end(), reported_positions_.begin(),
                          reported_positions_.end());
  }
  return view;
}

void CandleRingCache::DoReset() {
  offset_ = 0;
  k_buffer_ = v_buffer_ = k_chunk_ = v_chunk_ = Tensor();
  reported_positions_.clear();
  counters_.bytes_held = 0;
}

}  // namespace kvcheck::defects
