#include "src/engine/foreign_tensor.h"

#include <cstddef>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/base/status_macros.h"
#include "src/tensor/layout.h"
#include "src/tensor/storage.h"
#include "src/tensor/strided_loop.h"

namespace kvcheck::engine {

kvcheck_tensor Describe(const Tensor& tensor) {
  kvcheck_tensor t{};
  t.dtype = DTypeCode(tensor.dtype());
  t.rank = 4;
  for (int d = 0; d < 4; ++d) {
    t.shape[d] = tensor.dim(d);
    t.strides[d] = tensor.strides()[d];
  }
  // The element at the view's offset; the ABI passes data pointers, never offsets.
  t.data = tensor.storage() == nullptr
               ? nullptr
               : static_cast<void*>(tensor.storage()->bytes() +
                                    tensor.layout().offset() * DTypeSize(tensor.dtype()));
  return t;
}

int32_t DTypeCode(DType dtype) {
  switch (dtype) {
    case DType::kF16:
      return KVCHECK_DTYPE_F16;
    case DType::kBF16:
      return KVCHECK_DTYPE_BF16;
    case DType::kF32:
      break;
  }
  return KVCHECK_DTYPE_F32;
}

std::optional<DType> DTypeFromCode(int32_t code) {
  switch (code) {
    case KVCHECK_DTYPE_F32:
      return DType::kF32;
    case KVCHECK_DTYPE_F16:
      return DType::kF16;
    case KVCHECK_DTYPE_BF16:
      return DType::kBF16;
    default:
      return std::nullopt;
  }
}

namespace {

// The checked dtype and layout of a descriptor: rank 4, a known dtype, a layout
// Layout::Strided accepts (no negative dimension or stride, no overflowing extent), data for a
// non-empty tensor. Errors carry `code`: kInvalidArgument for what kvcheck was given, kInternal
// for what an engine returned.
absl::StatusOr<std::pair<DType, Layout>> ForeignLayout(const kvcheck_tensor& foreign,
                                                        const std::string& what,
                                                        absl::StatusCode code) {
  if (foreign.rank != 4) {
    return absl::Status(code, absl::StrCat(what, ": rank ", foreign.rank, ", expected 4"));
  }
  const std::optional<DType> dtype = DTypeFromCode(foreign.dtype);
  if (!dtype.has_value()) {
    return absl::Status(code, absl::StrCat(what, ": unknown dtype code ", foreign.dtype));
  }
  const absl::Span<const int64_t> shape(foreign.shape, 4);
  absl::StatusOr<Layout> layout =
      Layout::Strided(shape, absl::Span<const int64_t>(foreign.strides, 4), 0);
  if (!layout.ok()) return absl::Status(code, absl::StrCat(what, ": ", layout.status().message()));
  if (layout->required_storage() > 0 && foreign.data == nullptr) {
    return absl::Status(code, absl::StrCat(what, ": null data pointer for shape [",
                                           absl::StrJoin(shape, ", "), "]"));
  }
  return std::make_pair(*dtype, *std::move(layout));
}

}  // namespace

namespace {

// The layout of a descriptor an engine returned, checked against the dtype and shape the
// contract requires.
absl::StatusOr<Layout> ReturnedLayout(const kvcheck_tensor& foreign, DType dtype,
                                      absl::Span<const int64_t> expected_shape,
                                      const std::string& what) {
  KV_ASSIGN_OR_RETURN(auto checked, ForeignLayout(foreign, what, absl::StatusCode::kInternal));
  auto& [got, layout] = checked;
  if (got != dtype) {
    return absl::InternalError(absl::StrCat(what, ": dtype ", DTypeName(got), ", expected ",
                                            DTypeName(dtype)));
  }
  const absl::Span<const int64_t> shape(foreign.shape, 4);
  for (int d = 0; d < 4; ++d) {
    if (expected_shape[d] >= 0 && shape[d] != expected_shape[d]) {
      return absl::InternalError(absl::StrCat(
          what, ": shape [", absl::StrJoin(shape, ", "), "], expected [",
          absl::StrJoin(expected_shape, ", ", [](std::string* out, int64_t n) {
            absl::StrAppend(out, n < 0 ? std::string("any") : absl::StrCat(n));
          }),
          "] (dimension ", d, ")"));
    }
  }
  return std::move(layout);
}

}  // namespace

absl::StatusOr<Tensor> BorrowReturned(const kvcheck_tensor& foreign, DType dtype,
                                      absl::Span<const int64_t> expected_shape,
                                      const std::string& what) {
  KV_ASSIGN_OR_RETURN(Layout layout, ReturnedLayout(foreign, dtype, expected_shape, what));
  const int64_t extent = layout.required_storage();
  return Tensor::View(Storage::Borrow(dtype, static_cast<std::byte*>(foreign.data), extent),
                      std::move(layout));
}

absl::StatusOr<Tensor> BorrowForeign(const kvcheck_tensor& foreign, const std::string& what) {
  KV_ASSIGN_OR_RETURN(auto checked,
                      ForeignLayout(foreign, what, absl::StatusCode::kInvalidArgument));
  const auto& [dtype, layout] = checked;
  return Tensor::View(
      Storage::Borrow(dtype, static_cast<std::byte*>(foreign.data), layout.required_storage()),
      layout);
}

absl::Status WriteForeign(const Tensor& tensor, const kvcheck_tensor& foreign,
                          const std::string& what) {
  KV_ASSIGN_OR_RETURN(auto checked,
                      ForeignLayout(foreign, what, absl::StatusCode::kInvalidArgument));
  const auto& [dtype, layout] = checked;
  if (tensor.rank() != 4 || dtype != tensor.dtype()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": rank or dtype differ from the result"));
  }
  for (int d = 0; d < 4; ++d) {
    if (foreign.shape[d] != tensor.dim(d)) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": dimension ", d, " is ",
                                                     foreign.shape[d], ", the result's ",
                                                     tensor.dim(d)));
    }
  }
  if (layout.num_elements() == 0) return absl::OkStatus();
  // The source layout carries its own offset.
  CopyStridedBytes(tensor.storage()->bytes(), tensor.layout(), static_cast<std::byte*>(foreign.data),
                   layout, DTypeSize(tensor.dtype()));
  return absl::OkStatus();
}

}  // namespace kvcheck::engine
