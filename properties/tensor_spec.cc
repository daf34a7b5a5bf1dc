#include "properties/tensor_spec.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/base/status_macros.h"
#include "src/tensor/copy_ops.h"
#include "src/tensor/view_ops.h"

namespace kvcheck::properties {

TensorSpec TensorSpec::Contiguous(DType dtype, std::vector<int64_t> shape,
                                  std::vector<float> values) {
  TensorSpec spec;
  spec.dtype = dtype;
  spec.buffer_order.resize(shape.size());
  std::iota(spec.buffer_order.begin(), spec.buffer_order.end(), 0);
  spec.padding.assign(shape.size(), 0);
  spec.offset.assign(shape.size(), 0);
  spec.shape = std::move(shape);
  spec.values = std::move(values);
  return spec;
}

void RepeatAlong(TensorSpec& spec, int dim) {
  const int64_t size = spec.shape[dim];
  int64_t inner = 1;
  for (size_t d = dim + 1; d < spec.shape.size(); ++d) inner *= spec.shape[d];
  for (size_t i = 0; i < spec.values.size(); ++i) {
    const int64_t at = static_cast<int64_t>(i) / inner % size;
    spec.values[i] = spec.values[i - at * inner];
  }
  spec.broadcast_dims.push_back(dim);
}

namespace {

// The buffer and view of `spec` without its broadcasts.
absl::StatusOr<Tensor> MaterializeDense(const TensorSpec& spec);

}  // namespace

absl::StatusOr<Tensor> Materialize(const TensorSpec& spec) {
  if (spec.broadcast_dims.empty()) return MaterializeDense(spec);
  // One element across each broadcast dim in the buffer, then the view widened with stride 0.
  TensorSpec narrow = spec;
  narrow.broadcast_dims.clear();
  std::vector<bool> broadcast(spec.shape.size(), false);
  for (int d : spec.broadcast_dims) broadcast[d] = true;
  narrow.values.clear();
  for (size_t i = 0; i < spec.values.size(); ++i) {
    int64_t rest = static_cast<int64_t>(i);
    bool first = true;
    for (int d = static_cast<int>(spec.shape.size()) - 1; d >= 0; --d) {
      if (broadcast[d] && rest % spec.shape[d] != 0) first = false;
      rest /= spec.shape[d];
    }
    if (first) narrow.values.push_back(spec.values[i]);
  }
  for (int d : spec.broadcast_dims) narrow.shape[d] = std::min<int64_t>(spec.shape[d], 1);
  KV_ASSIGN_OR_RETURN(const Tensor dense, MaterializeDense(narrow));
  std::vector<int64_t> strides(dense.strides().begin(), dense.strides().end());
  for (int d : spec.broadcast_dims) strides[d] = 0;
  KV_ASSIGN_OR_RETURN(Layout layout,
                      Layout::Strided(spec.shape, strides, dense.layout().offset()));
  return Tensor::View(dense.storage(), std::move(layout));
}

namespace {

// Every element of `storage` set to the dtype's red-zone pattern (kRedZoneBits).
void Poison(Storage& storage) {
  const uint32_t bits = RedZoneBits(storage.dtype());
  const int64_t size = DTypeSize(storage.dtype());
  std::byte* out = storage.bytes();
  for (int64_t e = 0; e < storage.num_elements(); ++e) {
    std::memcpy(out + e * size, &bits, static_cast<size_t>(size));  // little-endian
  }
}

absl::StatusOr<Tensor> MaterializeDense(const TensorSpec& spec) {
  const int rank = static_cast<int>(spec.shape.size());
  Dims buffer_shape;
  int64_t buffer_elements = 1;
  for (int i = 0; i < rank; ++i) {
    const int d = spec.buffer_order[i];
    buffer_shape.push_back(spec.shape[d] + spec.padding[d]);
    buffer_elements *= buffer_shape.back();
  }
  // The buffer between two red zones, in one storage poisoned throughout: a read before or
  // past the view, or of the padding between its rows, reads a NaN, the same one every time.
  KV_ASSIGN_OR_RETURN(std::shared_ptr<Storage> storage,
                      Storage::Allocate(spec.dtype, kRedZoneElements + buffer_elements +
                                                        kRedZoneElements));
  Poison(*storage);
  KV_ASSIGN_OR_RETURN(const Layout contiguous, Layout::Contiguous(buffer_shape));
  KV_ASSIGN_OR_RETURN(Layout layout,
                      Layout::Strided(buffer_shape, contiguous.strides(), kRedZoneElements));
  KV_ASSIGN_OR_RETURN(Tensor view, Tensor::View(std::move(storage), std::move(layout)));
  for (int i = 0; i < rank; ++i) {
    const int d = spec.buffer_order[i];
    KV_ASSIGN_OR_RETURN(view, Narrow(view, i, spec.offset[d], spec.shape[d]));
  }
  // Logical dim d lives at buffer dim i where buffer_order[i] == d.
  std::vector<int> to_logical(rank);
  for (int i = 0; i < rank; ++i) to_logical[spec.buffer_order[i]] = i;
  KV_ASSIGN_OR_RETURN(view, Permute(view, to_logical));
  KV_ASSIGN_OR_RETURN(Tensor values, Tensor::FromFloats(spec.dtype, spec.shape, spec.values));
  KV_RETURN_IF_ERROR(CopyInto(view, values));
  return view;
}

}  // namespace

std::string DescribeLayout(const TensorSpec& spec) {
  std::vector<std::string> parts;
  std::vector<int> identity(spec.shape.size());
  std::iota(identity.begin(), identity.end(), 0);
  const auto any = [](const std::vector<int64_t>& v) {
    return std::any_of(v.begin(), v.end(), [](int64_t x) { return x != 0; });
  };
  if (spec.buffer_order != identity) {
    parts.push_back(absl::StrCat("buffer order [", absl::StrJoin(spec.buffer_order, ","), "]"));
  }
  if (any(spec.padding)) {
    parts.push_back(absl::StrCat("padding [", absl::StrJoin(spec.padding, ","), "]"));
  }
  if (any(spec.offset)) {
    parts.push_back(absl::StrCat("offset [", absl::StrJoin(spec.offset, ","), "]"));
  }
  if (!spec.broadcast_dims.empty()) {
    parts.push_back(absl::StrCat("stride 0 along [", absl::StrJoin(spec.broadcast_dims, ","), "]"));
  }
  return parts.empty() ? "contiguous" : absl::StrJoin(parts, " ");
}

void showValue(const TensorSpec& spec, std::ostream& os) {
  os << DTypeName(spec.dtype) << "[" << absl::StrJoin(spec.shape, ",") << "] buffer_order["
     << absl::StrJoin(spec.buffer_order, ",") << "] padding[" << absl::StrJoin(spec.padding, ",")
     << "] offset[" << absl::StrJoin(spec.offset, ",") << "]";
  if (!spec.broadcast_dims.empty()) {
    os << " stride 0 along [" << absl::StrJoin(spec.broadcast_dims, ",") << "]";
  }
  if (spec.values.size() <= 16) os << " values {" << absl::StrJoin(spec.values, ", ") << "}";
}

}  // namespace kvcheck::properties
