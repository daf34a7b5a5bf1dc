// File: layout.h
// Layout: the shape, strides (in elements) and start offset of a strided tensor view.
//
// A Layout is always valid once constructed: every dimension is >= 0, every stride is
// >= 0, and the number of elements and the largest reachable element offset fit in int64_t.
// The factories return an error (never a wrapped value) when they would not.
//
// Contiguity follows the rule of the engines kvcheck models (candle's Shape::is_contiguous):
// walking from the innermost dimension outwards with acc = 1, every dimension of size > 1
// must have stride == acc, then acc *= size. Dimensions of size 1 (and 0) are not checked,
// and the start offset does not matter. So (B,1,H,D) transposed to (B,H,1,D) is contiguous,
// while a narrowed (B,H,n,D) view of a (B,H,Cap,D) buffer is contiguous only when n == Cap or
// B == H == 1.
#ifndef KVCHECK_SRC_TENSOR_LAYOUT_H_
#define KVCHECK_SRC_TENSOR_LAYOUT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "src/base/check.h"
#include "src/tensor/dims.h"

namespace kvcheck {

// "[1, 3, 4, 64]".
std::string DimsToString(absl::Span<const int64_t> dims);

class Layout {
 public:
  // Rank-0 layout of one element at offset 0.
  Layout() = default;

  // Row-major contiguous layout of `shape` at offset 0.
  // Errors: kInvalidArgument for a rank over kMaxRank, a negative dimension or an element
  // count over int64_t.
  static absl::StatusOr<Layout> Contiguous(absl::Span<const int64_t> shape);

  // Arbitrary strided layout.
  // Errors: kInvalidArgument when ranks differ or exceed kMaxRank, a dimension, stride or the
  // offset is negative, or the element count / largest offset overflows int64_t.
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

  // The shape [0] with stride [1]: the layout of a tensor without storage.
  static Layout EmptyVector() { return Layout(Dims{0}, Dims{1}, 0, 0, 0); }

  // Elements [start, start + length) of dimension `dim`: a sub-window of a valid layout is
  // valid, so this needs no overflow checks (ops validate the arguments, then call it).
  // REQUIRES: 0 <= dim < rank(), 0 <= start, 0 <= length, start + length <= dim(dim).
  Layout Narrowed(int dim, int64_t start, int64_t length) const {
    Layout narrowed = *this;
    narrowed.Narrow(dim, start, length);
    return narrowed;
  }
  // The same, in place (views are made on every append: this avoids copying the layout
  // through temporaries).
  void Narrow(int dim, int64_t start, int64_t length) {
    KV_CHECK(dim >= 0 && dim < rank() && start >= 0 && length >= 0 &&
             start <= shape_[dim] - length);
    const int64_t old_size = shape_[dim];
    shape_[dim] = length;
    if (num_elements_ == 0 || length == 0) {
      num_elements_ = 0;
      required_storage_ = 0;
      return;
    }
    // Every dimension is now >= 1 and at most its old size, so the product fits. A product,
    // not num_elements_ / old_size * length: a 64-bit division takes tens of cycles, on every
    // view a cache returns.
    int64_t num_elements = 1;
    for (int d = 0; d < rank(); ++d) num_elements *= shape_[d];
    num_elements_ = num_elements;
    offset_ += start * strides_[dim];
    // The old last element minus the part of dimension `dim` that was cut off.
    required_storage_ -= (old_size - length - start) * strides_[dim];
  }

  // Makes this layout base.Narrowed(dim, start, length), storing only what differs from what
  // it holds: when it already is a narrowing of `base` along `dim` at `start` (a cache's view
  // of the last append, updated for the next), that is the extent of `dim` and the two counts,
  // three stores instead of a copy of the layout's 23 words. A decode step's stores queue
  // behind the new token's rows, whose lines are rarely in the first-level cache, so each
  // store the bookkeeping saves shortens the step (SlotBuffers::ViewInto).
  // REQUIRES: as Narrowed.
  [[gnu::always_inline]] void AssignNarrowed(const Layout& base, int dim, int64_t start,
                                             int64_t length) {
    // A cache's buffers are rank 4: with the rank known, the loops unroll, inline into the
    // decode step; other ranks take the same code out of line.
    if (base.rank() == 4) {
      AssignNarrowedOfRank<4>(base, dim, start, length);
    } else {
      AssignNarrowedAnyRank(base, dim, start, length);
    }
  }

  // Storage offset of the element at `index` (one entry per dimension).
  // REQUIRES: index.size() == rank() and 0 <= index[d] < dim(d).
  int64_t OffsetOf(absl::Span<const int64_t> index) const;

  // "shape [1, 3, 4, 64] strides [768, 256, 64, 1] offset 0".
  std::string DebugString() const;

 private:
  Layout(Dims shape, Dims strides, int64_t offset, int64_t num_elements, int64_t required_storage)
      : shape_(std::move(shape)),
        strides_(std::move(strides)),
        offset_(offset),
        num_elements_(num_elements),
        required_storage_(required_storage) {}

  [[gnu::noinline]] void AssignNarrowedAnyRank(const Layout& base, int dim, int64_t start,
                                               int64_t length) {
    AssignNarrowedOfRank<0>(base, dim, start, length);
  }
  // AssignNarrowed for base.rank() == kRank, or any rank when kRank is 0.
  template <int kRank>
  [[gnu::always_inline]] void AssignNarrowedOfRank(const Layout& base, int dim, int64_t start,
                                                   int64_t length) {
    const int rank = kRank > 0 ? kRank : base.rank();
    KV_CHECK(dim >= 0 && dim < rank && start >= 0 && length >= 0 &&
             start <= base.shape_[dim] - length);
    const int64_t stride = base.strides_[dim];
    // Narrow leaves the offset where an empty result starts.
    const bool empty = base.num_elements_ == 0 || length == 0;
    const int64_t offset = base.offset_ + (empty ? 0 : start * stride);
    // Whether this layout has base's rank, strides and extents except along `dim`, at that
    // offset: only loads, and without a branch per dimension.
    bool narrowing = offset_ == offset && this->rank() == rank;
#pragma GCC unroll 8
    for (int d = 0; d < rank; ++d) {
      narrowing &= strides_[d] == base.strides_[d];
      narrowing &= d == dim || shape_[d] == base.shape_[d];
    }
    if (!narrowing) {
      *this = base;
      offset_ = offset;
    }
    const int64_t base_size = base.shape_[dim];
    shape_[dim] = length;
    if (empty) {
      num_elements_ = 0;
      required_storage_ = 0;
      return;
    }
    int64_t num_elements = 1;  // a product: see Narrow
#pragma GCC unroll 8
    for (int d = 0; d < rank; ++d) num_elements *= shape_[d];
    num_elements_ = num_elements;
    required_storage_ = base.required_storage_ - (base_size - length - start) * stride;
  }

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
