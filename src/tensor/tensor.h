// File: tensor.h
// Tensor: shared Storage + a Layout (a strided view of it).
//
// Copying a Tensor copies the handle: both copies share storage, exactly like the tensors of
// the engines kvcheck models (candle's Arc storage). Views made by the ops in view_ops.h share
// storage too. DeepCopy() is the explicit way to get independent storage.
//
// Example:
//   KV_ASSIGN_OR_RETURN(Tensor k, Tensor::Zeros(DType::kF16, {1, 3, 8, 64}));
//   Tensor alias = k;                 // same storage
//   Tensor owned = k.DeepCopy();      // new storage, same values
#ifndef KVCHECK_SRC_TENSOR_TENSOR_H_
#define KVCHECK_SRC_TENSOR_TENSOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "src/tensor/dtype.h"
#include "src/tensor/layout.h"
#include "src/tensor/storage.h"

namespace kvcheck {

class Tensor {
 public:
  // An empty f32 tensor of shape [0] without storage.
  Tensor();

  // A new contiguous tensor of zeros.
  // Errors: those of Layout::Contiguous and Storage::Allocate.
  static absl::StatusOr<Tensor> Zeros(DType dtype, absl::Span<const int64_t> shape);

  // A new contiguous tensor whose every element the caller writes before anything reads it
  // (a kernel's output): not zeroed, a pass over memory saved. Where KVCHECK_POISON_UNUSED is
  // 1 (the default build, which the tests use) every element starts as NaN instead, so an
  // element the caller forgets shows up rather than reading as a plausible 0.
  // Errors: those of Zeros.
  static absl::StatusOr<Tensor> Uninitialized(DType dtype, absl::Span<const int64_t> shape);

  // A new contiguous tensor with every element set to `value` rounded to `dtype`.
  static absl::StatusOr<Tensor> Filled(DType dtype, absl::Span<const int64_t> shape, float value);

  // A new contiguous tensor holding `values` (row-major) rounded to `dtype`.
  // Errors: kInvalidArgument if values.size() != the element count of `shape`.
  static absl::StatusOr<Tensor> FromFloats(DType dtype, absl::Span<const int64_t> shape,
                                           absl::Span<const float> values);

  // A view of existing storage.
  // Errors: kInvalidArgument if `layout` reaches past the end of `storage` or storage is null.
  static absl::StatusOr<Tensor> View(std::shared_ptr<Storage> storage, Layout layout);

  DType dtype() const { return dtype_; }
  const Layout& layout() const { return layout_; }
  const Dims& shape() const { return layout_.shape(); }
  const Dims& strides() const { return layout_.strides(); }
  int rank() const { return layout_.rank(); }
  // REQUIRES: 0 <= d < rank().
  int64_t dim(int d) const { return layout_.dim(d); }
  int64_t num_elements() const { return layout_.num_elements(); }
  bool is_contiguous() const { return layout_.is_contiguous(); }
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  // True when both tensors view the same Storage object.
  bool SharesStorageWith(const Tensor& other) const {
    return storage_ != nullptr && storage_ == other.storage_;
  }

  // The view of elements [start, start + length) of dimension `dim` (same storage), without
  // the error handling of Narrow (view_ops.h): for callers whose arguments are valid by
  // construction, on hot paths.
  // REQUIRES: 0 <= dim < rank(), 0 <= start, 0 <= length, start + length <= dim(dim) (checked).
  Tensor Narrowed(int dim, int64_t start, int64_t length) const {
    Tensor view = *this;
    view.Narrow(dim, start, length);
    return view;
  }
  // The same, in place: a cache copies its buffer's tensor straight into the view it returns
  // and narrows it there, so a decode step copies each layout once.
  void Narrow(int dim, int64_t start, int64_t length) { layout_.Narrow(dim, start, length); }

  // Makes this tensor base.Narrowed(dim, start, length), storing only the fields that differ
  // (Layout::AssignNarrowed): a decode loop's view of a cache buffer, one token longer each
  // step, changes in three words and keeps its reference to the storage untouched.
  // REQUIRES: as Narrowed.
  [[gnu::always_inline]] void AssignNarrowed(const Tensor& base, int dim, int64_t start,
                                             int64_t length) {
    if (storage_ != base.storage_) storage_ = base.storage_;
    if (dtype_ != base.dtype_) dtype_ = base.dtype_;
    layout_.AssignNarrowed(base.layout_, dim, start, length);
  }

  // A contiguous tensor with new storage and the same element bits (an empty tensor keeps its
  // layout over new empty storage: its row-major strides may not be representable).
  Tensor DeepCopy() const;

  // Pointer to the element at the view's offset (the first element in row-major order).
  // REQUIRES: T is the element type of dtype(). Null for a tensor without storage.
  template <typename T>
  T* data() const {
    return storage_ == nullptr ? nullptr : storage_->data<T>() + layout_.offset();
  }

  // One element, widened to float (exact for every dtype).
  // REQUIRES: index is within the shape (checked).
  float GetFloat(absl::Span<const int64_t> index) const;
  // Writes one element, rounded to dtype() (writes through shared storage).
  void SetFloat(absl::Span<const int64_t> index, float value) const;
  // Raw bits of one element (the low 16 bits for f16/bf16).
  uint32_t GetBits(absl::Span<const int64_t> index) const;

  // All elements in row-major logical order.
  std::vector<float> ToFloats() const;
  std::vector<uint32_t> ToBits() const;

  // "f16 shape [1, 3, 4, 64] strides [768, 256, 64, 1] offset 0".
  std::string DebugString() const;

 private:
  Tensor(DType dtype, std::shared_ptr<Storage> storage, Layout layout)
      : dtype_(dtype), storage_(std::move(storage)), layout_(std::move(layout)) {}

  DType dtype_ = DType::kF32;
  std::shared_ptr<Storage> storage_;
  Layout layout_;
};

}  // namespace kvcheck

#endif  // KVCHECK_SRC_TENSOR_TENSOR_H_
