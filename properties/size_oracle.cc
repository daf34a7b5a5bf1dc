#include "properties/size_oracle.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "src/tensor/dims.h"

namespace kvcheck::properties {
namespace {

// Every size below is computed in 128 bits: a product or sum of two int64_t values cannot
// overflow it, and each loop stops as soon as a partial result leaves int64_t (so a third
// term can never be added to a value already near 2^127).
using Int128 = __int128;
constexpr Int128 kInt64Max = std::numeric_limits<int64_t>::max();

bool AnyNegative(absl::Span<const int64_t> values) {
  return std::any_of(values.begin(), values.end(), [](int64_t v) { return v < 0; });
}

bool DimInRange(int dim, int rank) { return dim >= 0 && dim < rank; }

}  // namespace

const char* ExpectName(Expect expect) {
  switch (expect) {
    case Expect::kOk:
      return "OK";
    case Expect::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case Expect::kOutOfRange:
      return "OUT_OF_RANGE";
    case Expect::kSomeError:
      return "INVALID_ARGUMENT or OUT_OF_RANGE";
    case Expect::kOkOrInvalid:
      return "OK or INVALID_ARGUMENT";
    case Expect::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
  }
  return "?";
}

bool StatusMeets(const absl::Status& status, Expect expect) {
  const absl::StatusCode code = status.code();
  switch (expect) {
    case Expect::kOk:
      return status.ok();
    case Expect::kInvalidArgument:
      return code == absl::StatusCode::kInvalidArgument;
    case Expect::kOutOfRange:
      return code == absl::StatusCode::kOutOfRange;
    case Expect::kSomeError:
      return code == absl::StatusCode::kInvalidArgument || code == absl::StatusCode::kOutOfRange;
    case Expect::kOkOrInvalid:
      return status.ok() || code == absl::StatusCode::kInvalidArgument;
    case Expect::kResourceExhausted:
      return code == absl::StatusCode::kResourceExhausted;
  }
  return false;
}

std::optional<std::string> StatusMismatch(const absl::Status& status, Expect expect,
                                          std::string_view op) {
  if (StatusMeets(status, expect)) return std::nullopt;
  return absl::StrCat(std::string(op), " returned ", status.ToString(), "; the contract says ",
                      ExpectName(expect));
}

std::optional<int64_t> ExactCount(absl::Span<const int64_t> shape) {
  if (AnyNegative(shape)) return std::nullopt;
  // A zero anywhere makes the count 0, whatever the other dimensions multiply to.
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  Int128 count = 1;
  for (int64_t d : shape) {
    count *= d;
    if (count > kInt64Max) return std::nullopt;
  }
  return static_cast<int64_t>(count);
}

std::optional<int64_t> SpanEnd(absl::Span<const int64_t> shape, absl::Span<const int64_t> strides,
                               int64_t offset) {
  if (shape.size() != strides.size() || offset < 0 || AnyNegative(shape) || AnyNegative(strides)) {
    return std::nullopt;
  }
  // end = offset + 1 + sum (size - 1) * stride. Each term is below 2^126 and `end` is checked
  // after every term, so the sum stays far inside 128 bits.
  Int128 end = Int128{offset} + 1;
  for (size_t d = 0; d < shape.size() && end <= kInt64Max; ++d) {
    if (shape[d] > 0) end += Int128{shape[d] - 1} * strides[d];
  }
  if (end > kInt64Max) return std::nullopt;
  return static_cast<int64_t>(end);
}

bool ContiguousLayoutValid(absl::Span<const int64_t> shape) {
  return RowMajorStrides(shape).has_value();
}

std::optional<std::vector<int64_t>> RowMajorStrides(absl::Span<const int64_t> shape) {
  if (shape.size() > static_cast<size_t>(kMaxRank) || AnyNegative(shape)) return std::nullopt;
  // Layout::Contiguous forms every partial product from the innermost dimension out, the
  // outermost one included, so each must fit (until a zero makes the rest 0).
  std::vector<int64_t> strides(shape.size());
  Int128 acc = 1;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    strides[d] = static_cast<int64_t>(acc);
    acc *= shape[d];
    if (acc > kInt64Max) return std::nullopt;
  }
  return strides;
}

bool ContiguousByRule(absl::Span<const int64_t> shape, absl::Span<const int64_t> strides) {
  // acc saturates just past int64_t: no stride can equal it then, and multiplying by a later
  // size stays inside 128 bits; a zero size brings it back to 0, as exact arithmetic does.
  Int128 acc = 1;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    if (shape[d] > 1 && Int128{strides[d]} != acc) return false;
    acc = std::min(acc * shape[d], kInt64Max + 1);
  }
  return true;
}

Expect StridedLayoutExpect(absl::Span<const int64_t> shape, absl::Span<const int64_t> strides,
                           int64_t offset) {
  if (shape.size() != strides.size() || shape.size() > static_cast<size_t>(kMaxRank)) {
    return Expect::kInvalidArgument;
  }
  if (offset < 0 || AnyNegative(shape) || AnyNegative(strides)) return Expect::kInvalidArgument;
  const std::optional<int64_t> count = ExactCount(shape);
  if (!count) return Expect::kInvalidArgument;
  if (SpanEnd(shape, strides, offset)) return Expect::kOk;
  return *count == 0 ? Expect::kOkOrInvalid : Expect::kInvalidArgument;
}

Expect TensorViewExpect(absl::Span<const int64_t> shape, absl::Span<const int64_t> strides,
                        int64_t offset, int64_t storage_elements) {
  if (ExactCount(shape).value_or(0) == 0) return Expect::kOkOrInvalid;
  const std::optional<int64_t> end = SpanEnd(shape, strides, offset);
  return end && *end <= storage_elements ? Expect::kOk : Expect::kInvalidArgument;
}

Expect NarrowExpect(absl::Span<const int64_t> shape, int dim, int64_t start, int64_t length) {
  const int rank = static_cast<int>(shape.size());
  if (!DimInRange(dim, rank)) return Expect::kInvalidArgument;
  if (length < 0) return start < 0 ? Expect::kSomeError : Expect::kInvalidArgument;
  // size - length cannot overflow: both are >= 0.
  if (start < 0 || start > shape[dim] - length) return Expect::kOutOfRange;
  return Expect::kOk;
}

Expect TransposeExpect(int rank, int dim0, int dim1) {
  return DimInRange(dim0, rank) && DimInRange(dim1, rank) ? Expect::kOk : Expect::kInvalidArgument;
}

Expect PermuteExpect(int rank, absl::Span<const int> order) {
  std::vector<int> sorted(order.begin(), order.end());
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> identity(rank);
  std::iota(identity.begin(), identity.end(), 0);
  return sorted == identity ? Expect::kOk : Expect::kInvalidArgument;
}

Expect ReshapeExpect(int64_t element_count, absl::Span<const int64_t> shape) {
  const std::optional<int64_t> count = ExactCount(shape);
  if (!count || *count != element_count) return Expect::kInvalidArgument;
  return ContiguousResultExpect(shape);
}

Expect ContiguousResultExpect(absl::Span<const int64_t> shape) {
  return ContiguousLayoutValid(shape) ? Expect::kOk : Expect::kOkOrInvalid;
}

Expect AllocationExpect(int64_t count, DType dtype, int64_t max_storage_bytes) {
  if (count < 0) return Expect::kInvalidArgument;
  const Int128 bytes = Int128{count} * DTypeSize(dtype);
  if (bytes > kInt64Max) return Expect::kInvalidArgument;
  if (bytes > max_storage_bytes) return Expect::kResourceExhausted;
  return Expect::kOk;
}

Expect NewTensorExpect(absl::Span<const int64_t> shape, DType dtype, int64_t max_storage_bytes) {
  if (!ContiguousLayoutValid(shape)) return Expect::kInvalidArgument;
  return AllocationExpect(*ExactCount(shape), dtype, max_storage_bytes);
}

Expect ContiguousExpect(absl::Span<const int64_t> shape, absl::Span<const int64_t> strides,
                        DType dtype, int64_t max_storage_bytes) {
  if (ContiguousByRule(shape, strides)) return Expect::kOk;
  return NewTensorExpect(shape, dtype, max_storage_bytes);
}

bool SameExceptAlong(absl::Span<const int64_t> a, absl::Span<const int64_t> b, int dim) {
  if (a.size() != b.size()) return false;
  for (size_t d = 0; d < a.size(); ++d) {
    if (static_cast<int>(d) != dim && a[d] != b[d]) return false;
  }
  return true;
}

std::optional<std::vector<int64_t>> CatShape(const std::vector<std::vector<int64_t>>& shapes,
                                             const std::vector<DType>& dtypes, int dim) {
  if (shapes.empty() || !DimInRange(dim, static_cast<int>(shapes[0].size()))) return std::nullopt;
  Int128 joined = 0;  // empty parts may be 2^63 - 1 long along dim
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (dtypes[i] != dtypes[0] || !SameExceptAlong(shapes[i], shapes[0], dim)) return std::nullopt;
    joined += shapes[i][dim];
  }
  if (joined > kInt64Max) return std::nullopt;
  std::vector<int64_t> shape = shapes[0];
  shape[dim] = static_cast<int64_t>(joined);
  return shape;
}

Expect CatExpect(const std::vector<std::vector<int64_t>>& shapes, const std::vector<DType>& dtypes,
                 int dim, int64_t max_storage_bytes) {
  const std::optional<std::vector<int64_t>> shape = CatShape(shapes, dtypes, dim);
  if (!shape) return Expect::kInvalidArgument;
  return NewTensorExpect(*shape, dtypes[0], max_storage_bytes);
}

Expect SliceSetExpect(absl::Span<const int64_t> dst_shape, absl::Span<const int64_t> src_shape,
                      bool same_dtype, int dim, int64_t offset) {
  const bool dim_valid = DimInRange(dim, static_cast<int>(dst_shape.size()));
  const bool past_end = dim_valid && src_shape.size() == dst_shape.size() &&
                        (offset < 0 || offset > dst_shape[dim] - src_shape[dim]);
  if (!dim_valid || !same_dtype || !SameExceptAlong(dst_shape, src_shape, dim)) {
    return past_end ? Expect::kSomeError : Expect::kInvalidArgument;
  }
  return past_end ? Expect::kOutOfRange : Expect::kOk;
}

}  // namespace kvcheck::properties
