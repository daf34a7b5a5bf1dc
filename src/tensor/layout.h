// File: layout.h
// Layout: the shape, strides (in elements) and start offset of a strided tensor view.
//
// A Layout is always valid once constructed: every dimension is >= 0, every stride is
// >= 0, and the number of elements and the largest reachable element offset fit in int64_t.
// The factories return an error (never a wrapped value) when they would not.
//
// Contiguity follows the rule of the engines kvcheck models (candle's Shape::is_contiguous,
// see shared/spec section 1.2): walking from the innermost dimension outwards with acc = 1,
// every dimension of size > 1 must have stride == acc, then acc *= size. Dimensions of size
// 1 (and 0) are not checked, and the start offset does not matter. So (B,1,H,D) transposed
// to (B,H,1,D) is contiguous, while a narrowed (B,H,n,D) view of a (B,H,Cap,D) buffer is
// contiguous only when n == Cap or B == H == 1.
#ifndef KVCHECK_SRC_TENSOR_LAYOUT_H_
#define KVCHECK_SRC_TENSOR_LAYOUT_H_

#include <cstdint>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace kvcheck {

// Shape or strides: one int64_t per dimension, outermost first.
using Dims = absl::InlinedVector<int64_t, 6>;

// "[1, 3, 4, 64]".
std::string DimsToString(absl::Span<const int64_t> dims);

class Layout {
 public:
  // Rank-0 layout of one element at offset 0.
  Layout() = default;

  // Row-major contiguous layout of `shape` at offset 0.
  // Errors: kInvalidArgument for a negative dimension or an element count over int64_t.
  static absl::StatusOr<Layout> Contiguous(absl::Span<const int64_t> shape);

  // Arbitrary strided layout.
  // Errors: kInvalidArgument when ranks differ, a dimension, stride or the offset is
  // negative, or the element count / largest offset overflows int64_t.
  static absl::StatusOr<Layout> Strided(absl::Span<const int64_t> shape,
                                        absl::Span<const int64_t> strides, int64_t offset);

  int rank() const { return static_cast<int>(shape_.size()); }
  const Dims& shape() const { return shape_; }
  const Dims& strides() const { return strides_; }
  int64_t offset() const { return offset_; }
  // REQUIRES: 0 <= d < rank().
  int64_t dim(int d) const { return shape_[d]; }
  int64_t stride(int d) const { return strides_[d]; }

  int64_t num_elements() const { return num_elements_; }
  bool is_empty() const { return num_elements_ == 0; }
  bool is_contiguous() const;

  // Number of storage elements a buffer must hold for every element of this view to be in
  // range: offset + sum((dim - 1) * stride) + 1, or 0 for an empty view.
  int64_t required_storage() const { return required_storage_; }

  // Storage offset of the element at `index` (one entry per dimension).
  // REQUIRES: index.size() == rank() and 0 <= index[d] < dim(d).
  int64_t OffsetOf(absl::Span<const int64_t> index) const;

  // "shape [1, 3, 4, 64] strides [768, 256, 64, 1] offset 0".
  std::string DebugString() const;

 private:
  Layout(Dims shape, Dims strides, int64_t offset, int64_t num_elements,
         int64_t required_storage)
      : shape_(std::move(shape)),
        strides_(std::move(strides)),
        offset_(offset),
        num_elements_(num_elements),
        required_storage_(required_storage) {}

  Dims shape_;
  Dims strides_;
  int64_t offset_ = 0;
  int64_t num_elements_ = 1;
  int64_t required_storage_ = 1;
};

// Row-major strides of a contiguous tensor of `shape`: stride[d] = product of sizes after d
// (zeros included, as candle computes them).
// REQUIRES: Layout::Contiguous(shape) succeeds.
Dims ContiguousStrides(absl::Span<const int64_t> shape);

}  // namespace kvcheck

#endif  // KVCHECK_SRC_TENSOR_LAYOUT_H_
