#include "src/cache/cache_buffers.h"

#include <algorithm>
#include <limits>

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

std::vector<int64_t> SequentialPositions(int64_t batch, int64_t length) {
  std::vector<int64_t> positions(batch * length);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t j = 0; j < length; ++j) positions[b * length + j] = j;
  }
  return positions;
}

absl::Status WriteRingChunk(const Tensor& buffer, const Tensor& chunk, int64_t length_before,
                            int64_t window) {
  const int64_t seq = chunk.dim(2);
  const int64_t first = std::max<int64_t>(0, seq - window);  // older tokens are overwritten
  const int64_t count = seq - first;
  const int64_t start_slot = (length_before + first) % window;
  const int64_t before_wrap = std::min(count, window - start_slot);
  KV_ASSIGN_OR_RETURN(Tensor head, Narrow(chunk, 2, first, before_wrap));
  KV_RETURN_IF_ERROR(SliceSet(buffer, head, 2, start_slot));
  if (count > before_wrap) {
    KV_ASSIGN_OR_RETURN(Tensor tail, Narrow(chunk, 2, first + before_wrap, count - before_wrap));
    KV_RETURN_IF_ERROR(SliceSet(buffer, tail, 2, 0));
  }
  return absl::OkStatus();
}

}  // namespace kvcheck::cache_internal
