#include "defects/raw_interleaved_cache.h"

#include <cstring>

#include "defects/buffer_bytes.h"
#include "src/base/status_macros.h"
#include "src/cache/interleaved_cache.h"
#include "src/tensor/copy_ops.h"

namespace kvcheck::defects {

absl::StatusOr<std::unique_ptr<KvCache>> RawInterleavedCache::Create(const CacheConfig& config) {
  if (config.initial_capacity < 0) return absl::InvalidArgumentError("negative capacity");
  return std::unique_ptr<KvCache>(new RawInterleavedCache(config.initial_capacity));
}

RawInterleavedCache::RawInterleavedCache(const RawInterleavedCache& other)
    : KvCache(other), capacity_(other.capacity_) {
  if (other.buffer_.rank() == 4) {
    buffer_ = other.buffer_.DeepCopy();  // candle clones the Vec
    CountForkCopy(buffer_, counters_);
  }
}

std::unique_ptr<KvCache> RawInterleavedCache::Fork() const {
  return std::unique_ptr<KvCache>(new RawInterleavedCache(*this));
}

absl::Status RawInterleavedCache::DoAppend(const Tensor& k, const Tensor& v,
                                           absl::Span<const bool> /*active*/) {
  const KvShape& shape = *this->shape();
  if (buffer_.rank() != 4) {
    const int64_t dims[] = {shape.batch, capacity_, shape.num_kv_heads, 2 * shape.head_dim};
    KV_ASSIGN_OR_RETURN(buffer_, Tensor::Zeros(shape.dtype, dims));
    counters_.bytes_allocated += BufferBytes(buffer_);
  }
  const int64_t size = DTypeSize(shape.dtype);
  const int64_t position_elements = shape.num_kv_heads * 2 * shape.head_dim;
  int64_t length = seq_len();
  for (int64_t s = 0; s < k.dim(2); ++s, ++length) {
    // candle: `if (len + 1) * pos_stride > buf.len() { buf.resize(buf.len() * 2) }`.
    if (length + 1 > capacity_) {
      const int64_t doubled = capacity_ * 2;  // 0 stays 0: the defect
      if (doubled > capacity_) {
        const int64_t dims[] = {shape.batch, doubled, shape.num_kv_heads, 2 * shape.head_dim};
        KV_ASSIGN_OR_RETURN(Tensor grown, Tensor::Zeros(shape.dtype, dims));
        KV_RETURN_IF_ERROR(SliceSet(grown, buffer_.Narrowed(1, 0, length), 1, 0));
        counters_.bytes_allocated += BufferBytes(grown);
        counters_.bytes_growth_copied += BufferBytes(buffer_.Narrowed(1, 0, length));
        buffer_ = grown;
        capacity_ = doubled;
      }
    }
    counters_.bytes_held = buffer_.num_elements() * size;
    // Write position `length` of every batch row with raw copies, as candle's slice copy
    // does; at capacity 0 this writes past the allocation (AddressSanitizer reports it).
    for (int64_t b = 0; b < shape.batch; ++b) {
      std::byte* row = buffer_.storage()->bytes() +
                       (b * capacity_ + length) * position_elements * size;
      for (int64_t h = 0; h < shape.num_kv_heads; ++h) {
        const Tensor k_row = k.Narrowed(0, b, 1).Narrowed(1, h, 1).Narrowed(2, s, 1).DeepCopy();
        const Tensor v_row = v.Narrowed(0, b, 1).Narrowed(1, h, 1).Narrowed(2, s, 1).DeepCopy();
        std::memcpy(row + h * 2 * shape.head_dim * size, k_row.storage()->bytes(),
                    shape.head_dim * size);
        std::memcpy(row + (h * 2 + 1) * shape.head_dim * size, v_row.storage()->bytes(),
                    shape.head_dim * size);
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<CacheView> RawInterleavedCache::DoView() const {
  const Tensor used = buffer_.Narrowed(1, 0, std::min(seq_len(), capacity_));
  return CacheView{InterleavedHalf(used, /*is_value=*/false), InterleavedHalf(used, /*is_value=*/true),
                   {}};
}

void RawInterleavedCache::DoReset() {
  buffer_ = Tensor();
  counters_.bytes_held = 0;
}

}  // namespace kvcheck::defects
