#include "src/cache/cache_buffers.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "src/base/check.h"
#include "src/base/checked_math.h"
#include "src/base/status_macros.h"
#include "src/tensor/copy_ops.h"
#include "src/tensor/strided_loop.h"
#include "src/tensor/view_ops.h"

namespace kvcheck::cache_internal {

absl::StatusOr<Tensor> AllocateBuffer(DType dtype, absl::Span<const int64_t> shape,
                                      CacheCounters& counters) {
  KV_ASSIGN_OR_RETURN(Tensor buffer, Tensor::Zeros(dtype, shape));
  if (kPoisonUnused) FillNaN(buffer);
  counters.bytes_allocated += buffer.num_elements() * DTypeSize(dtype);
  return buffer;
}

namespace {

absl::Status OverBudget(const char* strategy, std::optional<int64_t> bytes, int64_t budget) {
  return absl::ResourceExhaustedError(absl::StrCat(
      strategy, ": the cache would hold ",
      bytes.has_value() ? absl::StrCat(*bytes, " bytes") : std::string("more than 2^63 bytes"),
      " of buffers, over its storage budget of ", budget, " bytes"));
}

}  // namespace

absl::Status CheckStorageBudget(const char* strategy, std::optional<int64_t> bytes,
                                int64_t budget) {
  if (bytes.has_value() && *bytes <= budget) return absl::OkStatus();
  return OverBudget(strategy, bytes, budget);
}

int64_t SlotBytes(const KvShape& shape) {
  // Validated shapes of an existing input: B * KH * D elements fit (they were allocated).
  return 2 * shape.batch * shape.num_kv_heads * shape.head_dim * DTypeSize(shape.dtype);
}

absl::StatusOr<int64_t> GrownCapacity(const char* strategy, int64_t capacity, int64_t initial,
                                      int64_t needed, int64_t slot_bytes, int64_t budget) {
  int64_t grown = capacity == 0 ? std::max(initial, needed)
                                : std::max(needed, capacity > INT64_MAX / 2 ? needed : 2 * capacity);
  const int64_t affordable = budget / slot_bytes;
  if (needed > affordable) return OverBudget(strategy, CheckedMul(needed, slot_bytes), budget);
  return std::min(grown, affordable);
}

void FillNaN(const Tensor& view) {
  if (view.num_elements() == 0) return;
  DispatchDType(view.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T nan = FromFloat<T>(std::numeric_limits<float>::quiet_NaN());
    T* base = view.storage()->template data<T>();
    ForEachRow(view.layout(), [&](int64_t offset, int64_t length, int64_t stride) {
      for (int64_t i = 0; i < length; ++i) base[offset + i * stride] = nan;
    });
  });
}

void CopyTokens(const Tensor& src, int64_t src_first, int64_t count, const Tensor& dst,
                int64_t dst_slot) {
  KV_CHECK(src.rank() == 4 && dst.rank() == 4 && src.dtype() == dst.dtype());
  KV_CHECK(src.dim(0) == dst.dim(0) && src.dim(1) == dst.dim(1) && src.dim(3) == dst.dim(3));
  KV_CHECK(src_first >= 0 && count >= 0 && src_first + count <= src.dim(2));
  KV_CHECK(dst_slot >= 0 && dst_slot + count <= dst.dim(2));
  if (count == 0) return;
  const int64_t size = DTypeSize(src.dtype());
  const int64_t batch = src.dim(0), heads = src.dim(1), head_dim = src.dim(3);
  const Dims& ss = src.strides();
  const Dims& ds = dst.strides();
  const std::byte* src_base = src.storage()->bytes() + (src.layout().offset() + src_first * ss[2]) * size;
  std::byte* dst_base = dst.storage()->bytes() + (dst.layout().offset() + dst_slot * ds[2]) * size;
  // Token rows contiguous on both sides (and consecutive tokens adjacent): one memcpy per run.
  const bool rows_contiguous = (ss[3] == 1 || head_dim == 1) && (ds[3] == 1 || head_dim == 1);
  const bool run_contiguous = rows_contiguous && (count == 1 || (ss[2] == head_dim && ds[2] == head_dim));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      const std::byte* from = src_base + (b * ss[0] + h * ss[1]) * size;
      std::byte* to = dst_base + (b * ds[0] + h * ds[1]) * size;
      if (run_contiguous) {
        std::memcpy(to, from, count * head_dim * size);
        continue;
      }
      for (int64_t s = 0; s < count; ++s) {
        const std::byte* row_from = from + s * ss[2] * size;
        std::byte* row_to = to + s * ds[2] * size;
        if (rows_contiguous) {
          std::memcpy(row_to, row_from, head_dim * size);
          continue;
        }
        for (int64_t d = 0; d < head_dim; ++d) {
          std::memcpy(row_to + d * ds[3] * size, row_from + d * ss[3] * size, size);
        }
      }
    }
  }
}

void PrefetchSlotForWrite(const Tensor& buffer, int64_t slot) {
  if (buffer.rank() != 4 || slot < 0 || slot >= buffer.dim(2)) return;
  const int64_t size = DTypeSize(buffer.dtype());
  const Dims& strides = buffer.strides();
  const int64_t row_bytes = buffer.dim(3) * strides[3] * size;
  const std::byte* base = buffer.storage()->bytes() + (buffer.layout().offset() + slot * strides[2]) * size;
  for (int64_t b = 0; b < buffer.dim(0); ++b) {
    for (int64_t h = 0; h < buffer.dim(1); ++h) {
      const std::byte* row = base + (b * strides[0] + h * strides[1]) * size;
      for (int64_t offset = 0; offset < row_bytes; offset += 64) {
        __builtin_prefetch(row + offset, /*rw=*/1, /*locality=*/3);
      }
    }
  }
}

void WriteTokens(const Tensor& k, const Tensor& v, const Tensor& k_buffer,
                 const Tensor& v_buffer, int64_t slot, int64_t next_slot) {
  const int64_t head_dim = k.dim(3);
  const Dims& ks = k.strides();
  const Dims& vs = v.strides();
  const Dims& kbs = k_buffer.strides();
  const Dims& vbs = v_buffer.strides();
  const bool rows_contiguous =
      head_dim == 1 || (ks[3] == 1 && vs[3] == 1 && kbs[3] == 1 && vbs[3] == 1);
  if (k.dim(2) != 1 || !rows_contiguous) {
    CopyTokens(k, 0, k.dim(2), k_buffer, slot);
    CopyTokens(v, 0, v.dim(2), v_buffer, slot);
    PrefetchSlotForWrite(k_buffer, next_slot);
    PrefetchSlotForWrite(v_buffer, next_slot);
    return;
  }
  // CopyTokens' checks, for both pairs at once.
  const int64_t batch = k.dim(0), heads = k.dim(1), capacity = k_buffer.dim(2);
  KV_CHECK(k.rank() == 4 && v.rank() == 4 && k_buffer.rank() == 4 && v_buffer.rank() == 4);
  KV_CHECK(k.dtype() == k_buffer.dtype() && v.dtype() == k.dtype() && v_buffer.dtype() == k.dtype());
  KV_CHECK(k_buffer.dim(0) == batch && k_buffer.dim(1) == heads && k_buffer.dim(3) == head_dim);
  KV_CHECK(v.dim(0) == batch && v.dim(1) == heads && v.dim(2) == 1 && v.dim(3) == head_dim);
  KV_CHECK(v_buffer.dim(0) == batch && v_buffer.dim(1) == heads && v_buffer.dim(2) == capacity &&
           v_buffer.dim(3) == head_dim);
  KV_CHECK(slot >= 0 && slot < capacity);
  // Byte offsets in locals: memcpy may write anywhere as far as the compiler knows, so
  // strides read through the tensors would be read again after every row.
  const int64_t size = DTypeSize(k.dtype());
  const size_t row_bytes = static_cast<size_t>(head_dim * size);
  const int64_t k_from_batch = ks[0] * size, k_from_head = ks[1] * size;
  const int64_t v_from_batch = vs[0] * size, v_from_head = vs[1] * size;
  const int64_t k_to_batch = kbs[0] * size, k_to_head = kbs[1] * size, k_to_slot = kbs[2] * size;
  const int64_t v_to_batch = vbs[0] * size, v_to_head = vbs[1] * size, v_to_slot = vbs[2] * size;
  const std::byte* const k_from = k.storage()->bytes() + k.layout().offset() * size;
  const std::byte* const v_from = v.storage()->bytes() + v.layout().offset() * size;
  std::byte* const k_to = k_buffer.storage()->bytes() + k_buffer.layout().offset() * size +
                          slot * k_to_slot;
  std::byte* const v_to = v_buffer.storage()->bytes() + v_buffer.layout().offset() * size +
                          slot * v_to_slot;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      std::memcpy(k_to + b * k_to_batch + h * k_to_head, k_from + b * k_from_batch + h * k_from_head,
                  row_bytes);
    }
  }
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      std::memcpy(v_to + b * v_to_batch + h * v_to_head, v_from + b * v_from_batch + h * v_from_head,
                  row_bytes);
    }
  }
  if (next_slot < 0 || next_slot >= capacity) return;
  // PrefetchSlotForWrite's lines (rows contiguous: a row is row_bytes long).
  const std::byte* const k_next = k_to + (next_slot - slot) * k_to_slot;
  const std::byte* const v_next = v_to + (next_slot - slot) * v_to_slot;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      const std::byte* k_row = k_next + b * k_to_batch + h * k_to_head;
      const std::byte* v_row = v_next + b * v_to_batch + h * v_to_head;
      for (size_t offset = 0; offset < row_bytes; offset += 64) {
        __builtin_prefetch(k_row + offset, /*rw=*/1, /*locality=*/3);
        __builtin_prefetch(v_row + offset, /*rw=*/1, /*locality=*/3);
      }
    }
  }
}

void NarrowedViewInto(const Tensor& k_buffer, const Tensor& v_buffer, int64_t length,
                      CacheView& view) {
  // Copy assignment, not a new tensor: std::shared_ptr's assignment from a pointer to the same
  // control block leaves the count alone. Each count change is a locked instruction, which
  // also waits for the append's row stores to drain from the store buffer: in the append
  // benchmark, copying and dropping the view's two tensors cost 1.1-1.5 us per 30-layer step
  // against a 2.7-4.0 us floor (2-core Intel Xeon VM).
  view.k = k_buffer;
  view.k.Narrow(2, 0, length);
  view.v = v_buffer;
  view.v.Narrow(2, 0, length);
  view.positions.clear();
}

void WriteRingChunk(const Tensor& buffer, const Tensor& chunk, int64_t length_before,
                    int64_t window) {
  const int64_t seq = chunk.dim(2);
  const int64_t first = std::max<int64_t>(0, seq - window);  // older tokens are overwritten
  const int64_t count = seq - first;
  const int64_t start_slot = (length_before + first) % window;
  const int64_t before_wrap = std::min(count, window - start_slot);
  CopyTokens(chunk, first, before_wrap, buffer, start_slot);
  CopyTokens(chunk, first + before_wrap, count - before_wrap, buffer, 0);
}

void WriteRingStep(const Tensor& k, const Tensor& v, const Tensor& k_buffer,
                   const Tensor& v_buffer, int64_t length_before, int64_t window) {
  const int64_t next_slot = RingSlot(length_before + k.dim(2), window);
  if (k.dim(2) == 1) {  // a decode step: one slot, no wrap inside the chunk
    WriteTokens(k, v, k_buffer, v_buffer, RingSlot(length_before, window), next_slot);
    return;
  }
  WriteRingChunk(k_buffer, k, length_before, window);
  WriteRingChunk(v_buffer, v, length_before, window);
  PrefetchSlotForWrite(k_buffer, next_slot);
  PrefetchSlotForWrite(v_buffer, next_slot);
}

}  // namespace kvcheck::cache_internal
