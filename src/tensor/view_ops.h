// File: view_ops.h
// Ops that return views: the result shares storage with the input and no element is copied
// (Reshape copies only when no view can express the result).
//
// Every op validates its arguments and returns kInvalidArgument (bad dimension index, bad
// shape) or kOutOfRange (a window past the end of a dimension), with a message naming the
// op, the input shape and the offending dimension. The input is never modified.
#ifndef KVCHECK_SRC_TENSOR_VIEW_OPS_H_
#define KVCHECK_SRC_TENSOR_VIEW_OPS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "src/tensor/tensor.h"

namespace kvcheck {

// Elements [start, start + length) of dimension `dim`.
// Errors: kInvalidArgument if dim is not in [0, rank) or length < 0; kOutOfRange if start < 0
// or start + length > dim size.
absl::StatusOr<Tensor> Narrow(const Tensor& tensor, int dim, int64_t start, int64_t length);

// Swaps dimensions dim0 and dim1 (strides swap with them).
// Errors: kInvalidArgument if either is not in [0, rank).
absl::StatusOr<Tensor> Transpose(const Tensor& tensor, int dim0, int dim1);

// Reorders dimensions: result dimension i is input dimension order[i].
// Errors: kInvalidArgument if `order` is not a permutation of [0, rank).
absl::StatusOr<Tensor> Permute(const Tensor& tensor, absl::Span<const int> order);

// Same elements in row-major order under a new shape. A view when the strides allow it
// (the dimensions being merged or split are mergeable), otherwise a contiguous copy.
// Errors: kInvalidArgument for a negative dimension or a different element count.
absl::StatusOr<Tensor> Reshape(const Tensor& tensor, absl::Span<const int64_t> shape);

}  // namespace kvcheck

#endif  // KVCHECK_SRC_TENSOR_VIEW_OPS_H_
