#include "properties/tensor_spec.h"

#include <numeric>

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

absl::StatusOr<Tensor> Materialize(const TensorSpec& spec) {
  const int rank = static_cast<int>(spec.shape.size());
  Dims buffer_shape;
  for (int i = 0; i < rank; ++i) {
    const int d = spec.buffer_order[i];
    buffer_shape.push_back(spec.shape[d] + spec.padding[d]);
  }
  KV_ASSIGN_OR_RETURN(Tensor view, Tensor::Filled(spec.dtype, buffer_shape, kPaddingSentinel));
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

void showValue(const TensorSpec& spec, std::ostream& os) {
  os << DTypeName(spec.dtype) << "[" << absl::StrJoin(spec.shape, ",") << "] buffer_order["
     << absl::StrJoin(spec.buffer_order, ",") << "] padding[" << absl::StrJoin(spec.padding, ",")
     << "] offset[" << absl::StrJoin(spec.offset, ",") << "]";
  if (spec.values.size() <= 16) os << " values {" << absl::StrJoin(spec.values, ", ") << "}";
}

}  // namespace kvcheck::properties
