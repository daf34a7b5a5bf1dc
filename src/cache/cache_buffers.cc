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
  // A zero-stride input's B * KH * D need not fit anything that was allocated (2^61 elements
  // of one float), so the product is checked: past int64_t no budget admits it.
  const std::optional<int64_t> bytes = CheckedProduct(
      {2, shape.batch, shape.num_kv_heads, shape.head_dim, DTypeSize(shape.dtype)});
  return bytes.value_or(INT64_MAX);
}

absl::StatusOr<int64_t> GrownCapacity(const char* strategy, int64_t capacity, int64_t initial,
                                      int64_t needed, int64_t slot_bytes, int64_t budget) {
  int64_t grown = capacity == 0
                      ? std::max(initial, needed)
                      : std::max(needed, capacity > INT64_MAX / 2 ? needed : 2 * capacity);
  const int64_t affordable = budget / slot_bytes;
  if (needed > affordable) return OverBudget(strategy, CheckedMul(needed, slot_bytes), budget);
  return std::min(grown, affordable);
}

absl::StatusOr<SlotBuffers> NewWindowBuffers(const char* strategy, const KvShape& shape,
                                             int64_t window, int64_t budget, const SlotBuffers& old,
                                             CacheCounters& counters) {
  const int64_t slot_bytes = SlotBytes(shape);
  KV_RETURN_IF_ERROR(CheckStorageBudget(strategy, CheckedMul(window, slot_bytes), budget));
  const int64_t dims[] = {shape.batch, shape.num_kv_heads, window, shape.head_dim};
  KV_ASSIGN_OR_RETURN(Tensor k, AllocateBuffer(shape.dtype, dims, counters));
  KV_ASSIGN_OR_RETURN(Tensor v, AllocateBuffer(shape.dtype, dims, counters));
  if (!old.empty()) {
    KV_RETURN_IF_ERROR(CopyInto(k, old.k()));
    KV_RETURN_IF_ERROR(CopyInto(v, old.v()));
    counters.bytes_other_copied += 2 * old.k().num_elements() * DTypeSize(shape.dtype);
  }
  counters.bytes_held = window * slot_bytes;
  return SlotBuffers(std::move(k), std::move(v));
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

void WriteRingStep(const Tensor& k, const Tensor& v, const SlotBuffers& buffers,
                   int64_t length_before, int64_t window) {
  const int64_t next_slot = RingSlot(length_before + k.dim(2), window);
  if (k.dim(2) == 1) {  // a decode step: one slot, no wrap inside the chunk
    buffers.Write(k, v, RingSlot(length_before, window), next_slot);
    return;
  }
  WriteRingChunk(buffers.k(), k, length_before, window);
  WriteRingChunk(buffers.v(), v, length_before, window);
  buffers.PrefetchSlot(next_slot);
}

}  // namespace kvcheck::cache_internal
