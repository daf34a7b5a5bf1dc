// File: tensor_checks.h
// The pieces shared by the tensor properties (tensor_properties.cc and
// hostile_tensor_properties.cc):
//   - names for counterexamples, so that hostile sizes read as "2^31" rather than 2147483648;
//   - generators, run in the parent, where RapidCheck records every draw to shrink it. What
//     they draw, and in which order, is part of every seed and reproduce string of the
//     properties that use them: changing either invalidates saved replays;
//   - checks, run in the isolated child (case_isolation.h): they build tensors from their
//     specs, call the ops and assert with RC_ASSERT / RC_FAIL, so a violated contract (or a
//     crash) is a failing, shrunk case with the message given here.
// Every expected code, size and layout comes from the exact oracle of size_oracle.h.
#ifndef KVCHECK_PROPERTIES_TENSOR_CHECKS_H_
#define KVCHECK_PROPERTIES_TENSOR_CHECKS_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "properties/dense_model.h"
#include "properties/size_oracle.h"
#include "properties/tensor_spec.h"
#include "rapidcheck.h"
#include "src/tensor/dims.h"
#include "src/tensor/layout.h"
#include "src/tensor/tensor.h"

namespace kvcheck::properties {

// ----- Names for counterexamples.

// `v` in decimal, except the sizes people read as powers of two: INT64_MAX, INT64_MIN, and
// from 2^16 up "2^k" and "(2^k-1)", with a leading "-" when negative
// (2147483648 -> "2^31", 4294967295 -> "(2^32-1)", -65536 -> "-2^16").
std::string SizeName(int64_t v);

// "[a, b, ...]", every value written by SizeName.
std::string SizesName(const std::vector<int64_t>& values);

// The arguments of one Narrow call, drawn as one labelled value: a counterexample reads
// "dim 2, start 3, length 1" (start and length written by SizeName).
struct NarrowArgs {
  int dim = 0;
  int64_t start = 0, length = 0;
};
void showValue(const NarrowArgs& a, std::ostream& os);

// ----- Shapes.

// The element count of a small shape (the product of its dimensions; 1 for rank 0).
// REQUIRES: the product fits in int64_t (generated shapes of dims <= 6 do); hostile shapes
// take ExactCount (size_oracle.h) instead.
int64_t Count(const std::vector<int64_t>& small_shape);

// The dimensions of a Dims (a shape or strides) as a vector, outermost first.
std::vector<int64_t> AsVector(const Dims& dims);

// ----- Generators (run in the parent).

// A tensor of rank min_rank..4 with every dimension in min_dim..5, any dtype, any layout
// (LayoutKind::kAny), values including NaN and +-inf (Values::kAny). One draw: the TensorSpec
// prints its dtype, shape and layout.
rc::Gen<TensorSpec> GenAnyTensorSpec(int min_rank = 1, int64_t min_dim = 0);

// The arguments of a Narrow of a tensor of `shape`: any dimension, any start and length within
// it; shrinks to dimension 0, start 0, length 0. REQUIRES: shape is not empty.
rc::Gen<NarrowArgs> GenNarrowArgs(std::vector<int64_t> shape);

// The inputs of a Cat: one to three parts of one dtype, any layouts, equal but for the size
// along `dim` (0..3 each), values including NaN and +-inf.
struct CatParts {
  int dim = 0;
  std::vector<TensorSpec> parts;
};
void showValue(const CatParts& c, std::ostream& os);
rc::Gen<CatParts> GenCatParts();

// A SliceSet: `src` written into `dst` along `dim` from `offset` (both of one dtype, any
// layouts, dst's dimensions 1..5, src's size along `dim` 0..dst's).
struct SliceSetCase {
  TensorSpec dst, src;
  int dim = 0;
  int64_t offset = 0;
};
void showValue(const SliceSetCase& c, std::ostream& os);
rc::Gen<SliceSetCase> GenSliceSetCase();

// A permutation of [0, rank), from random sort keys; the keys shrink to 0, the identity order.
rc::Gen<std::vector<int>> GenPermutation(int rank);

// Hostile integers: mostly typical (in [0, typical_max]), sometimes a small negative in -4..-1
// (a size_t that wrapped), an edge of kHostileEdges (2^31 - 1, 2^31, 2^32, 2^62, INT64_MIN /
// MAX, ...) or any int64_t. Shrinks towards the typical category, and an edge towards the
// edge of smallest magnitude. REQUIRES: typical_max >= 0.
rc::Gen<int64_t> GenHostileInt(int64_t typical_max);

// A dimension index for a tensor of `rank`: usually valid (0 when rank is 0), sometimes -1,
// `rank`, INT_MAX or INT_MIN. Shrinks towards a valid index.
rc::Gen<int> GenHostileDim(int rank);

// A dimension of a huge tensor: small (1..5; shrinks to these) or one of 2^31 - 1, 2^31,
// 2^32, 2^40, 2^62, INT64_MAX.
rc::Gen<int64_t> GenHugeDim();

// ----- Checks (run in the isolated child).

// CheckElements compares every element up to this many, and probes larger tensors.
inline constexpr int64_t kMaxCheckedElements = 4096;

// The storage limit (bytes) of a hostile-size check (ScopedStorageLimit).
inline constexpr int64_t kCaseStorageLimit = int64_t{1} << 20;

// Sets the storage limit of storage.h to `bytes` for the scope, then restores the previous
// one. For hostile-size checks: the default (8 GiB) admits 2^31 f32 elements, so a result
// just past 2^31 elements would really be allocated; kCaseStorageLimit (1 MiB) sends every
// such result down the same error path of Storage::Allocate without needing the memory.
class ScopedStorageLimit {
 public:
  explicit ScopedStorageLimit(int64_t bytes);
  ~ScopedStorageLimit();
  ScopedStorageLimit(const ScopedStorageLimit&) = delete;
  ScopedStorageLimit& operator=(const ScopedStorageLimit&) = delete;

 private:
  int64_t previous_;
};

// The tensor `spec` describes (Materialize); fails the case if it cannot be built.
Tensor Build(const TensorSpec& spec);

// The value `value` holds; fails the case if it holds an error.
template <typename T>
T Ok(absl::StatusOr<T> value) {
  RC_ASSERT(value.ok());
  return *std::move(value);
}

// Fails the case with StatusMismatch's message (naming `op`, the code and the expectation)
// unless `status` is what `expect` allows.
void AssertStatus(const absl::Status& status, Expect expect, const char* op);

// Tags the case "<op>: <status code>" (e.g. "Cat: INVALID_ARGUMENT"), so that the
// distribution shows that every outcome was reached.
void TagOutcome(const char* op, const absl::Status& status);

// A copy of every byte of t's storage (the elements outside the view included), to check
// that a call wrote nothing, or nothing outside its target.
std::vector<uint8_t> StorageBytes(const Tensor& t);

// Fails the case unless the layout's fields are `shape`, `strides` (when given) and `offset`
// (when given), and its derived sizes agree with exact arithmetic: num_elements() is the exact
// count, required_storage() is the exact span end (0 when empty), and is_contiguous() is the
// rule of layout.h (ContiguousByRule). Messages show the layout's DebugString.
void CheckLayoutIs(const Layout& layout, const std::vector<int64_t>& shape,
                   const std::optional<std::vector<int64_t>>& strides,
                   std::optional<int64_t> offset);

// Fails the case unless every element of `t` has the bits expected(index), where `expected`
// takes a const std::vector<int64_t>& index and returns uint32_t (it may assert itself).
// Past kMaxCheckedElements only probes are read: the first, last and middle index of every
// dimension, and the last index of each dimension alone. Up to it, every element is read by
// index and ToBits() (the fused row loops) must agree with the index loop.
template <typename ExpectedFn>
void CheckElements(const Tensor& t, ExpectedFn&& expected) {
  const std::vector<int64_t> shape = AsVector(t.shape());
  if (t.num_elements() == 0) return;
  if (t.num_elements() <= kMaxCheckedElements) {
    std::vector<uint32_t> want;
    ForEachIndex(shape, [&](const std::vector<int64_t>& index) {
      want.push_back(expected(index));
      RC_ASSERT(t.GetBits(index) == want.back());
    });
    RC_ASSERT(t.ToBits() == want);  // the fused row loops agree with the index loop
    return;
  }
  std::vector<std::vector<int64_t>> probes(3, std::vector<int64_t>(shape.size()));
  for (size_t d = 0; d < shape.size(); ++d) {
    probes[1][d] = shape[d] - 1;
    probes[2][d] = shape[d] / 2;
    std::vector<int64_t> alone(shape.size(), 0);
    alone[d] = shape[d] - 1;
    probes.push_back(alone);
  }
  for (const std::vector<int64_t>& index : probes) RC_ASSERT(t.GetBits(index) == expected(index));
}

// Contiguous(t) against the exact oracle (ContiguousExpect under the current storage limit),
// tagged by TagOutcome: t itself (same layout, shared storage) when t is contiguous by the
// rule, else a new row-major tensor with offset 0 and the same elements; or the exact error
// (storage.h's codes past the limit, kInvalidArgument when no contiguous layout of the shape
// exists).
void CheckContiguous(const Tensor& t);

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_TENSOR_CHECKS_H_
