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
  if (KVCHECK_POISON_UNUSED) FillNaN(buffer);
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

}  // namespace kvcheck::cache_internal
