// File: foreign_tensor.h
// Conversions between kvcheck's Tensor and the ABI's strided descriptor (kvcheck_engine.h).
//   - Describe: a descriptor of a Tensor's view (no copy): what kvcheck passes to an engine.
//   - BorrowReturned: a Tensor over a descriptor an engine returned, after checking that the
//     descriptor is well formed and has the expected shape.
//   - BorrowForeign, WriteForeign: an engine's input as a Tensor, and a result written into it.
#ifndef KVCHECK_SRC_ENGINE_FOREIGN_TENSOR_H_
#define KVCHECK_SRC_ENGINE_FOREIGN_TENSOR_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "src/engine/kvcheck_engine.h"
#include "src/tensor/tensor.h"

namespace kvcheck::engine {

// REQUIRES: tensor.rank() == 4.
kvcheck_tensor Describe(const Tensor& tensor);

// A tensor over the engine's memory (no copy) after checking `foreign`: valid only until that
// memory is reused (the engine's next call on the object that returned it), unless its storage
// is detached first (Storage::Detach).
// `expected_shape`: the shape the contract requires (a -1 entry accepts any length there);
// `dtype`: the dtype it requires. `what` names the tensor in errors ("append's k").
// Errors (kInternal, naming `what` and the field): rank not 4, an unknown or unexpected dtype,
// a negative or unexpected dimension or stride, a null data pointer for a non-empty tensor,
// an element count or extent that overflows.
absl::StatusOr<Tensor> BorrowReturned(const kvcheck_tensor& foreign, DType dtype,
                                      absl::Span<const int64_t> expected_shape,
                                      const std::string& what);

// A tensor over the memory `foreign` describes, without a copy: valid only while that memory
// is (an engine's input, for the duration of the call). Errors (kInvalidArgument, naming
// `what`): a malformed descriptor, as BorrowReturned's.
absl::StatusOr<Tensor> BorrowForeign(const kvcheck_tensor& foreign, const std::string& what);

// Writes `tensor` into the memory `foreign` describes (same shape and dtype).
// Errors (kInvalidArgument, naming `what`): shape, dtype or a malformed descriptor.
absl::Status WriteForeign(const Tensor& tensor, const kvcheck_tensor& foreign,
                          const std::string& what);

// The ABI's dtype code and back.
int32_t DTypeCode(DType dtype);
std::optional<DType> DTypeFromCode(int32_t code);

}  // namespace kvcheck::engine

#endif  // KVCHECK_SRC_ENGINE_FOREIGN_TENSOR_H_
