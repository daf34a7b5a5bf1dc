// File: copy_ops.h
// Ops that copy elements: Contiguous, Cat, SliceSet (in place), CopyInto, Cast.
//
// All of them accept inputs with any strides (transposed, narrowed, padded views).
// Errors name the op, the shapes and the offending dimension: kInvalidArgument for bad
// dimension indices, rank/shape/dtype mismatches and size overflow; kOutOfRange for a
// target window past the end of a dimension. On error nothing is written.
#ifndef KVCHECK_SRC_TENSOR_COPY_OPS_H_
#define KVCHECK_SRC_TENSOR_COPY_OPS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "src/tensor/tensor.h"

namespace kvcheck {

// The tensor itself (same storage) if it is already contiguous by the rule in layout.h,
// else a new contiguous copy. Errors: kInvalidArgument when no contiguous layout of the shape
// exists (an empty shape whose row-major strides overflow int64_t, e.g. [0, 2, 2^63 - 1, 4]).
absl::StatusOr<Tensor> Contiguous(const Tensor& tensor);

// A new contiguous tensor: the inputs joined along `dim` (always new storage, even for a
// single input, so the result never aliases an input).
// Errors: kInvalidArgument for an empty list, dim out of range, differing ranks, dtypes or
// sizes in a dimension other than `dim`, or a joined size overflowing int64_t.
absl::StatusOr<Tensor> Cat(absl::Span<const Tensor> tensors, int dim);

// Writes `src` into `dst` at [offset, offset + src.dim(dim)) along `dim`, in place (through
// dst's storage, so every view of it sees the write). Any strides on either side; when src
// and dst share storage the source is read completely before anything is written.
// Errors: kInvalidArgument for dim out of range, dtype or rank mismatch, or other dims
// differing; kOutOfRange if offset < 0 or offset + src.dim(dim) > dst.dim(dim).
absl::Status SliceSet(const Tensor& dst, const Tensor& src, int dim, int64_t offset);

// Copies every element of `src` into `dst` (same shape), converting the dtype if it differs
// (rounding to nearest even). Writes through dst's storage.
// Errors: kInvalidArgument if the shapes differ.
absl::Status CopyInto(const Tensor& dst, const Tensor& src);

// A new contiguous tensor of `dtype` with the values of `tensor` (rounded if narrower).
absl::StatusOr<Tensor> Cast(const Tensor& tensor, DType dtype);

}  // namespace kvcheck

#endif  // KVCHECK_SRC_TENSOR_COPY_OPS_H_
