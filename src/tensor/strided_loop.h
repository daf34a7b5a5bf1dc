// File: strided_loop.h
// Row-major traversal of one or two strided layouts of the same shape, one innermost row at
// a time. The copy, cat, slice_set and conversion code is written once on top of these.
//
// Dimensions of size 1 are dropped and adjacent dimensions that are mergeable in every
// layout (stride[d] == stride[d+1] * size[d+1]) are fused, so a contiguous-to-contiguous
// copy becomes a single row and a narrowed KV-cache view becomes one row per (batch, head).
#ifndef KVCHECK_SRC_TENSOR_STRIDED_LOOP_H_
#define KVCHECK_SRC_TENSOR_STRIDED_LOOP_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "src/base/check.h"
#include "src/tensor/layout.h"

namespace kvcheck {
namespace strided_internal {

// Shape with one strides vector per layout, after dropping size-1 dims and fusing.
template <int kNumLayouts>
struct FusedDims {
  Dims shape;
  std::array<Dims, kNumLayouts> strides;
  std::array<int64_t, kNumLayouts> offsets;
};

template <int kNumLayouts>
FusedDims<kNumLayouts> Fuse(const std::array<const Layout*, kNumLayouts>& layouts) {
  FusedDims<kNumLayouts> fused;
  const Layout& first = *layouts[0];
  for (int l = 0; l < kNumLayouts; ++l) {
    KV_CHECK(layouts[l]->shape() == first.shape());
    fused.offsets[l] = layouts[l]->offset();
  }
  if (first.num_elements() == 0) {
    // Nothing to visit. An empty view's strides may be anything (found by the tensor_ops
    // fuzzer: stride 2^62 beside a zero-size dimension), so the fusing products below must
    // not be formed for it.
    fused.shape.push_back(0);
    for (int l = 0; l < kNumLayouts; ++l) fused.strides[l].push_back(1);
    return fused;
  }
  for (int d = 0; d < first.rank(); ++d) {
    const int64_t size = first.dim(d);
    if (size == 1) continue;
    bool mergeable = !fused.shape.empty();
    for (int l = 0; l < kNumLayouts && mergeable; ++l) {
      mergeable = fused.strides[l].back() == layouts[l]->stride(d) * size;
    }
    if (mergeable) {
      fused.shape.back() *= size;
      for (int l = 0; l < kNumLayouts; ++l) fused.strides[l].back() = layouts[l]->stride(d);
    } else {
      fused.shape.push_back(size);
      for (int l = 0; l < kNumLayouts; ++l) fused.strides[l].push_back(layouts[l]->stride(d));
    }
  }
  if (fused.shape.empty()) {  // a single element
    fused.shape.push_back(1);
    for (int l = 0; l < kNumLayouts; ++l) fused.strides[l].push_back(1);
  }
  return fused;
}

// Calls row(offsets, length, inner_strides) for every innermost row, in row-major order.
template <int kNumLayouts, typename RowFn>
void ForEachFusedRow(const FusedDims<kNumLayouts>& fused, RowFn&& row) {
  const int rank = static_cast<int>(fused.shape.size());
  for (int64_t size : fused.shape) {
    if (size == 0) return;
  }
  const int64_t length = fused.shape[rank - 1];
  std::array<int64_t, kNumLayouts> inner;
  for (int l = 0; l < kNumLayouts; ++l) inner[l] = fused.strides[l][rank - 1];
  Dims index(rank - 1, 0);
  std::array<int64_t, kNumLayouts> offsets = fused.offsets;
  while (true) {
    row(offsets, length, inner);
    // Odometer increment over the outer dimensions, updating offsets incrementally.
    int d = rank - 2;
    for (; d >= 0; --d) {
      ++index[d];
      for (int l = 0; l < kNumLayouts; ++l) offsets[l] += fused.strides[l][d];
      if (index[d] < fused.shape[d]) break;
      for (int l = 0; l < kNumLayouts; ++l) offsets[l] -= fused.strides[l][d] * fused.shape[d];
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

}  // namespace strided_internal

// Calls fn(offset, length, stride) for each innermost row of `layout`: the row's elements
// are at storage offsets offset, offset + stride, ..., in row-major order.
template <typename Fn>
void ForEachRow(const Layout& layout, Fn&& fn) {
  const auto fused = strided_internal::Fuse<1>({&layout});
  strided_internal::ForEachFusedRow<1>(
      fused, [&](const std::array<int64_t, 1>& offsets, int64_t length,
                 const std::array<int64_t, 1>& strides) { fn(offsets[0], length, strides[0]); });
}

// Calls fn(src_offset, dst_offset, length, src_stride, dst_stride) for each innermost row of
// two layouts of the same shape, visiting matching elements together.
// REQUIRES: src.shape() == dst.shape() (checked).
template <typename Fn>
void ForEachRowPair(const Layout& src, const Layout& dst, Fn&& fn) {
  const auto fused = strided_internal::Fuse<2>({&src, &dst});
  strided_internal::ForEachFusedRow<2>(
      fused, [&](const std::array<int64_t, 2>& offsets, int64_t length,
                 const std::array<int64_t, 2>& strides) {
        fn(offsets[0], offsets[1], length, strides[0], strides[1]);
      });
}

// Copies the elements (each `element_size` bytes: 2 or 4) of a view at `src` into a view
// of the same shape at `dst`: a memcpy per fused row when both inner strides are 1.
// REQUIRES: src_layout.shape() == dst_layout.shape(); the views do not overlap.
inline void CopyStridedBytes(const std::byte* src, const Layout& src_layout, std::byte* dst,
                             const Layout& dst_layout, int element_size) {
  ForEachRowPair(src_layout, dst_layout,
                 [&](int64_t src_offset, int64_t dst_offset, int64_t length, int64_t src_stride,
                     int64_t dst_stride) {
                   const std::byte* from = src + src_offset * element_size;
                   std::byte* to = dst + dst_offset * element_size;
                   if (src_stride == 1 && dst_stride == 1) {
                     std::memcpy(to, from, length * element_size);
                     return;
                   }
                   for (int64_t i = 0; i < length; ++i) {
                     std::memcpy(to + i * dst_stride * element_size,
                                 from + i * src_stride * element_size, element_size);
                   }
                 });
}

}  // namespace kvcheck

#endif  // KVCHECK_SRC_TENSOR_STRIDED_LOOP_H_
