#include "src/tensor/view_ops.h"

#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/base/checked_math.h"
#include "src/base/status_macros.h"
#include "src/tensor/copy_ops.h"

namespace kvcheck {
namespace {

absl::Status CheckDim(const char* op, const Tensor& tensor, int dim) {
  if (dim < 0 || dim >= tensor.rank()) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": dimension ", dim,
                                                   " out of range for shape ",
                                                   DimsToString(tensor.shape()), " (rank ",
                                                   tensor.rank(), ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> WithLayout(const Tensor& tensor, absl::Span<const int64_t> shape,
                                  absl::Span<const int64_t> strides, int64_t offset) {
  KV_ASSIGN_OR_RETURN(Layout layout, Layout::Strided(shape, strides, offset));
  if (tensor.storage() == nullptr) {
    // A storage-less (default) tensor only has empty views.
    return Tensor();
  }
  return Tensor::View(tensor.storage(), std::move(layout));
}

// Strides that view `tensor` (row-major element order) under `new_shape`, or nullopt if no
// view can: the classic no-copy reshape. Size-1 dims are ignored on the input side; for each
// group of input dims whose product equals a group of output dims, the input group must be
// mergeable, and the output strides are laid out contiguously from its innermost stride.
std::optional<Dims> ViewStrides(const Tensor& tensor, absl::Span<const int64_t> new_shape) {
  Dims old_shape, old_strides;
  for (int d = 0; d < tensor.rank(); ++d) {
    if (tensor.dim(d) != 1) {
      old_shape.push_back(tensor.dim(d));
      old_strides.push_back(tensor.layout().stride(d));
    }
  }
  const int old_rank = static_cast<int>(old_shape.size());
  const int new_rank = static_cast<int>(new_shape.size());
  Dims new_strides(new_rank, 1);
  int oi = 0, ni = 0;
  while (oi < old_rank && ni < new_rank) {
    int oj = oi + 1, nj = ni + 1;
    int64_t old_product = old_shape[oi], new_product = new_shape[ni];
    while (old_product != new_product) {
      if (new_product < old_product) {
        new_product *= new_shape[nj++];
      } else {
        old_product *= old_shape[oj++];
      }
    }
    for (int k = oi; k + 1 < oj; ++k) {
      if (old_strides[k] != old_strides[k + 1] * old_shape[k + 1]) return std::nullopt;
    }
    new_strides[nj - 1] = old_strides[oj - 1];
    for (int k = nj - 1; k > ni; --k) new_strides[k - 1] = new_strides[k] * new_shape[k];
    oi = oj;
    ni = nj;
  }
  // Trailing output dims are all size 1 here; give them the contiguous stride of 1.
  for (int k = ni; k < new_rank; ++k) new_strides[k] = 1;
  return new_strides;
}

}  // namespace

absl::StatusOr<Tensor> Narrow(const Tensor& tensor, int dim, int64_t start, int64_t length) {
  KV_RETURN_IF_ERROR(CheckDim("narrow", tensor, dim));
  if (length < 0) {
    return absl::InvalidArgumentError(absl::StrCat("narrow: length ", length,
                                                   " is negative (dimension ", dim,
                                                   " of shape ", DimsToString(tensor.shape()),
                                                   ")"));
  }
  const int64_t size = tensor.dim(dim);
  std::optional<int64_t> end = CheckedAdd(start, length);
  if (start < 0 || !end || *end > size) {
    return absl::OutOfRangeError(absl::StrCat("narrow: start ", start, " + length ", length,
                                              " exceeds dimension ", dim, " of size ", size,
                                              " (shape ", DimsToString(tensor.shape()), ")"));
  }
  return tensor.Narrowed(dim, start, length);
}

absl::StatusOr<Tensor> Transpose(const Tensor& tensor, int dim0, int dim1) {
  KV_RETURN_IF_ERROR(CheckDim("transpose", tensor, dim0));
  KV_RETURN_IF_ERROR(CheckDim("transpose", tensor, dim1));
  Dims shape = tensor.shape();
  Dims strides = tensor.strides();
  std::swap(shape[dim0], shape[dim1]);
  std::swap(strides[dim0], strides[dim1]);
  return WithLayout(tensor, shape, strides, tensor.layout().offset());
}

absl::StatusOr<Tensor> Permute(const Tensor& tensor, absl::Span<const int> order) {
  std::vector<bool> seen(tensor.rank(), false);
  bool valid = static_cast<int>(order.size()) == tensor.rank();
  for (size_t i = 0; valid && i < order.size(); ++i) {
    valid = order[i] >= 0 && order[i] < tensor.rank() && !seen[order[i]];
    if (valid) seen[order[i]] = true;
  }
  if (!valid) {
    return absl::InvalidArgumentError(absl::StrCat("permute: order [", absl::StrJoin(order, ", "),
                                                   "] is not a permutation of the dimensions of ",
                                                   DimsToString(tensor.shape())));
  }
  Dims shape, strides;
  for (int d : order) {
    shape.push_back(tensor.dim(d));
    strides.push_back(tensor.strides()[d]);
  }
  return WithLayout(tensor, shape, strides, tensor.layout().offset());
}

absl::StatusOr<Tensor> Reshape(const Tensor& tensor, absl::Span<const int64_t> shape) {
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0) {
      return absl::InvalidArgumentError(absl::StrCat("reshape: dimension ", d, " of target ",
                                                     DimsToString(shape), " is negative"));
    }
  }
  std::optional<int64_t> count = CheckedProduct(shape);
  if (!count || *count != tensor.num_elements()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "reshape: cannot reshape ", DimsToString(tensor.shape()), " (", tensor.num_elements(),
        " elements) to ", DimsToString(shape),
        count ? absl::StrCat(" (", *count, " elements)") : " (element count overflows int64)"));
  }
  KV_ASSIGN_OR_RETURN(Layout contiguous, Layout::Contiguous(shape));
  if (*count == 0) return WithLayout(tensor, shape, contiguous.strides(), tensor.layout().offset());
  if (std::optional<Dims> strides = ViewStrides(tensor, shape)) {
    return WithLayout(tensor, shape, *strides, tensor.layout().offset());
  }
  KV_ASSIGN_OR_RETURN(Tensor copy, Contiguous(tensor));
  return WithLayout(copy, shape, contiguous.strides(), copy.layout().offset());
}

}  // namespace kvcheck
