// File: size_oracle.h
// Expect: what the tensor contract (src/tensor/*.h) says a call with arbitrary sizes, strides,
// offsets and dimension indices must return, computed independently of the engine with exact
// (128-bit) arithmetic, so that a size past int64_t, or past 2^31 in an engine that narrowed
// an index somewhere, is predicted correctly instead of wrapping like the code under test.
//
// Shared by the tensor_ops fuzzer (fuzz/tensor_ops_fuzzer.cc) and the hostile-size tensor
// properties (properties/tensor_properties.cc). Every function is pure: shapes, strides and
// dtypes in, an Expect (or an exact size) out; nothing here calls the engine.
//
// Two strengths exist for results that need a new contiguous tensor:
//   - ...ResultExpect(shape) decides from the shape alone (the fuzzer's view: whether the
//     input was already contiguous is the engine's business, so an empty shape without
//     representable row-major strides may succeed or fail);
//   - ContiguousExpect / NewTensorExpect / CatExpect are exact: they apply the contiguity rule
//     of layout.h and the allocation limit of storage.h themselves.
#ifndef KVCHECK_PROPERTIES_SIZE_ORACLE_H_
#define KVCHECK_PROPERTIES_SIZE_ORACLE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "src/tensor/dtype.h"

namespace kvcheck::properties {

// What the contract says an operation must do.
enum class Expect {
  kOk,
  kInvalidArgument,
  kOutOfRange,
  kSomeError,          // both kinds of bad argument at once: either code
  kOkOrInvalid,        // sizes whose overflow check the contract leaves open (empty shapes)
  kResourceExhausted,  // an allocation over the storage limit (storage.h)
};

// "OK", "INVALID_ARGUMENT", ..., "OK or INVALID_ARGUMENT".
const char* ExpectName(Expect expect);

// Whether `status` is one the expectation allows.
bool StatusMeets(const absl::Status& status, Expect expect);

// nullopt when `status` meets `expect`, else the failure message
// "<op> returned <status>; the contract says <expected>".
std::optional<std::string> StatusMismatch(const absl::Status& status, Expect expect,
                                          std::string_view op);

// The edge values hostile sizes, strides and offsets are drawn from besides typical ones.
// The fuzzer indexes this table with input bytes: append, never reorder (the corpus decodes
// through it).
inline constexpr int64_t kHostileEdges[] = {
    INT64_MAX,           INT64_MIN,         int64_t{1} << 62,
    -(int64_t{1} << 62), int64_t{1} << 32,  (int64_t{1} << 31) - 1,
    int64_t{1} << 31,    INT64_MAX / 2 + 1,
};

// Exact product of `shape`, or nullopt for a negative dimension or a product past int64_t.
std::optional<int64_t> ExactCount(absl::Span<const int64_t> shape);

// One past the largest storage offset the view reaches: offset + sum over the dimensions of
// size > 0 of (size - 1) * stride + 1, or nullopt when it does not fit int64_t or any value is
// negative. (For an empty view this is what the offsets of its other dimensions would reach:
// the engine needs no storage for it, see Layout::required_storage().)
std::optional<int64_t> SpanEnd(absl::Span<const int64_t> shape, absl::Span<const int64_t> strides,
                               int64_t offset);

// Whether Layout::Contiguous(shape) must succeed: rank <= kMaxRank, no negative dimension, and
// the row-major strides (products of the inner sizes, zeros included) fit in int64_t.
bool ContiguousLayoutValid(absl::Span<const int64_t> shape);

// The strides Layout::Contiguous(shape) gives (ContiguousStrides in layout.h: the product of
// the sizes after each dimension, zeros included), or nullopt when !ContiguousLayoutValid.
std::optional<std::vector<int64_t>> RowMajorStrides(absl::Span<const int64_t> shape);

// The contiguity rule of layout.h in exact arithmetic: from the innermost dimension out with
// acc = 1, every dimension of size > 1 has stride == acc, then acc *= size.
bool ContiguousByRule(absl::Span<const int64_t> shape, absl::Span<const int64_t> strides);

// Layout::Strided(shape, strides, offset). An empty shape whose other dimensions reach past
// int64_t is kOkOrInvalid (the layout has no largest offset to overflow).
Expect StridedLayoutExpect(absl::Span<const int64_t> shape, absl::Span<const int64_t> strides,
                           int64_t offset);

// Tensor::View of a storage of `storage_elements` elements with the layout above.
// REQUIRES: Layout::Strided accepted the layout. Empty views are kOkOrInvalid.
Expect TensorViewExpect(absl::Span<const int64_t> shape, absl::Span<const int64_t> strides,
                        int64_t offset, int64_t storage_elements);

// Narrow(tensor of `shape`, dim, start, length) (view_ops.h).
Expect NarrowExpect(absl::Span<const int64_t> shape, int dim, int64_t start, int64_t length);

// Transpose / Permute of a tensor of rank `rank`.
Expect TransposeExpect(int rank, int dim0, int dim1);
Expect PermuteExpect(int rank, absl::Span<const int> order);

// Reshape of a tensor of `element_count` elements to `shape`; an empty target without a
// contiguous layout is kOkOrInvalid (the contract names only the count and sign errors).
Expect ReshapeExpect(int64_t element_count, absl::Span<const int64_t> shape);

// A new contiguous tensor of `shape` judged from the shape alone (the fuzzer's Contiguous,
// Cast and Cat results): kOk, or kOkOrInvalid for a shape without a contiguous layout (a
// permuted [2, 0, 2^63 - 1, 0] has no representable row-major strides; whether the input was
// already contiguous, and so returned as is, is not known from the shape).
Expect ContiguousResultExpect(absl::Span<const int64_t> shape);

// Storage::Allocate(dtype, count) under a limit of `max_storage_bytes`: kInvalidArgument for a
// negative count or a byte size past int64_t, kResourceExhausted over the limit.
Expect AllocationExpect(int64_t count, DType dtype, int64_t max_storage_bytes);

// Tensor::Zeros(dtype, shape): the errors of Layout::Contiguous, then of the allocation.
Expect NewTensorExpect(absl::Span<const int64_t> shape, DType dtype, int64_t max_storage_bytes);

// Contiguous() of a view (copy_ops.h), exactly: the view itself when contiguous by the rule,
// else a new tensor (NewTensorExpect).
Expect ContiguousExpect(absl::Span<const int64_t> shape, absl::Span<const int64_t> strides,
                        DType dtype, int64_t max_storage_bytes);

// Shapes of equal rank that agree in every dimension except `dim`.
bool SameExceptAlong(absl::Span<const int64_t> a, absl::Span<const int64_t> b, int dim);

// The shape Cat(parts, dim) must return, or nullopt when the arguments are invalid (an empty
// list, dim out of range, differing dtypes, ranks or other sizes, or a joined size along `dim`
// past int64_t, summed exactly): then the code is kInvalidArgument.
std::optional<std::vector<int64_t>> CatShape(const std::vector<std::vector<int64_t>>& shapes,
                                             const std::vector<DType>& dtypes, int dim);

// Cat exactly: invalid arguments, then NewTensorExpect of the joined shape.
Expect CatExpect(const std::vector<std::vector<int64_t>>& shapes, const std::vector<DType>& dtypes,
                 int dim, int64_t max_storage_bytes);

// SliceSet(dst, src, dim, offset): kInvalidArgument for a bad dim, dtype or shape, kOutOfRange
// for a window past the end, kSomeError when both apply.
Expect SliceSetExpect(absl::Span<const int64_t> dst_shape, absl::Span<const int64_t> src_shape,
                      bool same_dtype, int dim, int64_t offset);

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_SIZE_ORACLE_H_
