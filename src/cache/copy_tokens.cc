#include "src/cache/copy_tokens.h"

#include <cstring>

#include "src/base/check.h"

namespace kvcheck::cache_internal {

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
  const std::byte* src_base =
      src.storage()->bytes() + (src.layout().offset() + src_first * ss[2]) * size;
  std::byte* dst_base = dst.storage()->bytes() + (dst.layout().offset() + dst_slot * ds[2]) * size;
  // Token rows contiguous on both sides (and consecutive tokens adjacent): one memcpy per run.
  const bool rows_contiguous = (ss[3] == 1 || head_dim == 1) && (ds[3] == 1 || head_dim == 1);
  const bool run_contiguous =
      rows_contiguous && (count == 1 || (ss[2] == head_dim && ds[2] == head_dim));
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

}  // namespace kvcheck::cache_internal
