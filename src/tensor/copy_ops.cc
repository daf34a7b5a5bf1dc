#include "src/tensor/copy_ops.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "src/base/checked_math.h"
#include "src/base/status_macros.h"
#include "src/tensor/strided_loop.h"
#include "src/tensor/view_ops.h"

namespace kvcheck {
namespace {

// Converting copy between two layouts of the same shape and different element types.
template <typename Src, typename Dst>
void ConvertTyped(const Tensor& src, const Tensor& dst) {
  const Src* src_base = src.storage()->data<Src>();
  Dst* dst_base = dst.storage()->data<Dst>();
  ForEachRowPair(src.layout(), dst.layout(),
                 [&](int64_t src_offset, int64_t dst_offset, int64_t length, int64_t src_stride,
                     int64_t dst_stride) {
                   const Src* from = src_base + src_offset;
                   Dst* to = dst_base + dst_offset;
                   for (int64_t i = 0; i < length; ++i) {
                     to[i * dst_stride] = FromFloat<Dst>(ToFloat(from[i * src_stride]));
                   }
                 });
}

// REQUIRES: equal shapes, non-empty, both with storage, not overlapping.
void CopyElements(const Tensor& src, const Tensor& dst) {
  if (src.dtype() == dst.dtype()) {
    CopyStridedBytes(src.storage()->bytes(), src.layout(), dst.storage()->bytes(), dst.layout(),
                     DTypeSize(src.dtype()));
    return;
  }
  DispatchDType(src.dtype(), [&](auto src_tag) {
    DispatchDType(dst.dtype(), [&](auto dst_tag) {
      ConvertTyped<decltype(src_tag), decltype(dst_tag)>(src, dst);
    });
  });
}

}  // namespace

absl::StatusOr<Tensor> Contiguous(const Tensor& tensor) {
  if (tensor.is_contiguous()) return tensor;
  // Every element is written by the copy: no zero fill first.
  KV_ASSIGN_OR_RETURN(Tensor copy, Tensor::Uninitialized(tensor.dtype(), tensor.shape()));
  KV_RETURN_IF_ERROR(CopyInto(copy, tensor));
  return copy;
}

absl::StatusOr<Tensor> Cat(absl::Span<const Tensor> tensors, int dim) {
  if (tensors.empty()) return absl::InvalidArgumentError("cat: expects at least one tensor");
  const Tensor& first = tensors[0];
  if (dim < 0 || dim >= first.rank()) {
    return absl::InvalidArgumentError(absl::StrCat("cat: dimension ", dim,
                                                   " out of range for shape ",
                                                   DimsToString(first.shape())));
  }
  int64_t joined = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (t.dtype() != first.dtype()) {
      return absl::InvalidArgumentError(absl::StrCat("cat: dtype mismatch, tensor 0 is ",
                                                     DTypeName(first.dtype()), ", tensor ", i,
                                                     " is ", DTypeName(t.dtype())));
    }
    if (t.rank() != first.rank()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cat: rank mismatch, tensor 0 has shape ", DimsToString(first.shape()), ", tensor ",
          i, " has shape ", DimsToString(t.shape())));
    }
    for (int d = 0; d < first.rank(); ++d) {
      if (d != dim && t.dim(d) != first.dim(d)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "cat: shape mismatch in dimension ", d, ", tensor 0 has shape ",
            DimsToString(first.shape()), ", tensor ", i, " has shape ", DimsToString(t.shape())));
      }
    }
    std::optional<int64_t> sum = CheckedAdd(joined, t.dim(dim));
    if (!sum) {
      return absl::InvalidArgumentError(
          absl::StrCat("cat: joined size of dimension ", dim, " overflows int64"));
    }
    joined = *sum;
  }
  Dims shape = first.shape();
  shape[dim] = joined;
  // The inputs cover every index of `dim`, so the copies write every element: no zero fill
  // first (a concat cache's Cat of its whole K and V each step wrote them twice).
  KV_ASSIGN_OR_RETURN(Tensor result, Tensor::Uninitialized(first.dtype(), shape));
  int64_t at = 0;
  for (const Tensor& t : tensors) {
    if (t.num_elements() > 0) {
      KV_ASSIGN_OR_RETURN(Tensor target, Narrow(result, dim, at, t.dim(dim)));
      CopyElements(t, target);
    }
    at += t.dim(dim);
  }
  return result;
}

absl::Status SliceSet(const Tensor& dst, const Tensor& src, int dim, int64_t offset) {
  if (dim < 0 || dim >= dst.rank()) {
    return absl::InvalidArgumentError(absl::StrCat("slice_set: dimension ", dim,
                                                   " out of range for destination shape ",
                                                   DimsToString(dst.shape())));
  }
  if (src.dtype() != dst.dtype()) {
    return absl::InvalidArgumentError(absl::StrCat("slice_set: dtype mismatch, destination is ",
                                                   DTypeName(dst.dtype()), ", source is ",
                                                   DTypeName(src.dtype())));
  }
  if (src.rank() != dst.rank()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "slice_set: rank mismatch, destination shape ", DimsToString(dst.shape()),
        ", source shape ", DimsToString(src.shape())));
  }
  for (int d = 0; d < dst.rank(); ++d) {
    if (d != dim && src.dim(d) != dst.dim(d)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "slice_set: shape mismatch in dimension ", d, ", destination shape ",
          DimsToString(dst.shape()), ", source shape ", DimsToString(src.shape())));
    }
  }
  std::optional<int64_t> end = CheckedAdd(offset, src.dim(dim));
  if (offset < 0 || !end || *end > dst.dim(dim)) {
    return absl::OutOfRangeError(absl::StrCat(
        "slice_set: offset ", offset, " + source size ", src.dim(dim), " exceeds dimension ",
        dim, " of size ", dst.dim(dim), " (destination shape ", DimsToString(dst.shape()), ")"));
  }
  if (src.num_elements() == 0) return absl::OkStatus();
  KV_ASSIGN_OR_RETURN(Tensor target,
                      Tensor::View(dst.storage(), dst.layout().Narrowed(dim, offset, src.dim(dim))));
  // Overlapping source and target would read already-written elements: read src first.
  const Tensor source = src.SharesStorageWith(dst) ? src.DeepCopy() : src;
  CopyElements(source, target);
  return absl::OkStatus();
}

absl::Status CopyInto(const Tensor& dst, const Tensor& src) {
  if (src.shape() != dst.shape()) {
    return absl::InvalidArgumentError(absl::StrCat("copy: shape mismatch, destination shape ",
                                                   DimsToString(dst.shape()), ", source shape ",
                                                   DimsToString(src.shape())));
  }
  if (src.num_elements() == 0) return absl::OkStatus();
  const Tensor source = src.SharesStorageWith(dst) ? src.DeepCopy() : src;
  CopyElements(source, dst);
  return absl::OkStatus();
}

absl::StatusOr<Tensor> Cast(const Tensor& tensor, DType dtype) {
  KV_ASSIGN_OR_RETURN(Tensor result, Tensor::Uninitialized(dtype, tensor.shape()));
  if (tensor.num_elements() > 0) CopyElements(tensor, result);  // every element
  return result;
}

}  // namespace kvcheck
