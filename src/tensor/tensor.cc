#include "src/tensor/tensor.h"

#include <cstring>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "src/base/check.h"
#include "src/base/poison_unused.h"
#include "src/base/status_macros.h"
#include "src/tensor/strided_loop.h"

namespace kvcheck {

Tensor::Tensor() : layout_(Layout::EmptyVector()) {}

absl::StatusOr<Tensor> Tensor::Zeros(DType dtype, absl::Span<const int64_t> shape) {
  KV_ASSIGN_OR_RETURN(Layout layout, Layout::Contiguous(shape));
  KV_ASSIGN_OR_RETURN(std::shared_ptr<Storage> storage,
                      Storage::Allocate(dtype, layout.num_elements()));
  return Tensor(dtype, std::move(storage), std::move(layout));
}

absl::StatusOr<Tensor> Tensor::Uninitialized(DType dtype, absl::Span<const int64_t> shape) {
  KV_ASSIGN_OR_RETURN(Layout layout, Layout::Contiguous(shape));
  if (kPoisonUnused) {
    return Filled(dtype, shape, std::numeric_limits<float>::quiet_NaN());
  }
  KV_ASSIGN_OR_RETURN(std::shared_ptr<Storage> storage,
                      Storage::AllocateUninitialized(dtype, layout.num_elements()));
  return Tensor(dtype, std::move(storage), std::move(layout));
}

absl::StatusOr<Tensor> Tensor::Filled(DType dtype, absl::Span<const int64_t> shape,
                                      float value) {
  KV_ASSIGN_OR_RETURN(Tensor tensor, Zeros(dtype, shape));
  DispatchDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T element = FromFloat<T>(value);
    T* data = tensor.data<T>();
    for (int64_t i = 0; i < tensor.num_elements(); ++i) data[i] = element;
  });
  return tensor;
}

absl::StatusOr<Tensor> Tensor::FromFloats(DType dtype, absl::Span<const int64_t> shape,
                                          absl::Span<const float> values) {
  KV_ASSIGN_OR_RETURN(Tensor tensor, Zeros(dtype, shape));
  if (static_cast<int64_t>(values.size()) != tensor.num_elements()) {
    return absl::InvalidArgumentError(absl::StrCat("from_floats: ", values.size(),
                                                   " values for shape ", DimsToString(shape),
                                                   " of ", tensor.num_elements(), " elements"));
  }
  DispatchDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* data = tensor.data<T>();
    for (size_t i = 0; i < values.size(); ++i) data[i] = FromFloat<T>(values[i]);
  });
  return tensor;
}

absl::StatusOr<Tensor> Tensor::View(std::shared_ptr<Storage> storage, Layout layout) {
  if (storage == nullptr) return absl::InvalidArgumentError("view: storage is null");
  if (layout.required_storage() > storage->num_elements()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "view: layout ", layout.DebugString(), " needs ", layout.required_storage(),
        " elements but the storage holds ", storage->num_elements()));
  }
  const DType dtype = storage->dtype();
  return Tensor(dtype, std::move(storage), std::move(layout));
}

Tensor Tensor::DeepCopy() const {
  if (num_elements() == 0) {
    // Nothing to copy. An empty shape may have no representable row-major strides (a
    // permuted [2, 0, 2^63 - 1, 0]; found by the tensor_ops fuzzer), so the copy keeps this
    // layout over new, empty storage.
    absl::StatusOr<std::shared_ptr<Storage>> storage = Storage::Allocate(dtype_, 0);
    KV_CHECK(storage.ok());
    return Tensor(dtype_, *std::move(storage), layout_);
  }
  // A non-empty shape's row-major strides are at most its element count: they fit.
  Tensor copy = *Tensor::Uninitialized(dtype_, shape());
  if (num_elements() > 0) {  // every element: no zero fill first
    CopyStridedBytes(storage_->bytes(), layout_, copy.storage_->bytes(), copy.layout_,
                     DTypeSize(dtype_));
  }
  return copy;
}

float Tensor::GetFloat(absl::Span<const int64_t> index) const {
  const int64_t offset = layout_.OffsetOf(index);
  return DispatchDType(dtype_, [&](auto tag) {
    using T = decltype(tag);
    return ToFloat(storage_->data<T>()[offset]);
  });
}

void Tensor::SetFloat(absl::Span<const int64_t> index, float value) const {
  const int64_t offset = layout_.OffsetOf(index);
  DispatchDType(dtype_, [&](auto tag) {
    using T = decltype(tag);
    storage_->data<T>()[offset] = FromFloat<T>(value);
  });
}

uint32_t Tensor::GetBits(absl::Span<const int64_t> index) const {
  const int64_t offset = layout_.OffsetOf(index);
  uint32_t bits = 0;
  std::memcpy(&bits, storage_->bytes() + offset * DTypeSize(dtype_), DTypeSize(dtype_));
  return bits;
}

std::vector<float> Tensor::ToFloats() const {
  std::vector<float> values;
  values.reserve(num_elements());
  DispatchDType(dtype_, [&](auto tag) {
    using T = decltype(tag);
    const T* base = storage_ == nullptr ? nullptr : storage_->data<T>();
    ForEachRow(layout_, [&](int64_t offset, int64_t length, int64_t stride) {
      for (int64_t i = 0; i < length; ++i) values.push_back(ToFloat(base[offset + i * stride]));
    });
  });
  return values;
}

namespace {

// Appends the bits of the elements of `layout` over `base`, each of kSize bytes. The copy
// size is a constant so that each element is one load (the properties compare views bit by
// bit after every command, so this is a hot path of the suite).
template <int kSize>
void AppendBits(const std::byte* base, const Layout& layout, uint32_t* out) {
  ForEachRow(layout, [&](int64_t offset, int64_t length, int64_t stride) {
    const std::byte* row = base + offset * kSize;
    for (int64_t i = 0; i < length; ++i) {
      uint32_t value = 0;  // f16/bf16 bits land in the low half (little-endian x86/ARM)
      std::memcpy(&value, row + i * stride * kSize, kSize);
      *out++ = value;
    }
  });
}

}  // namespace

std::vector<uint32_t> Tensor::ToBits() const {
  std::vector<uint32_t> bits(num_elements());
  if (bits.empty()) return bits;
  const std::byte* base = storage_->bytes();
  if (DTypeSize(dtype_) == 4) {
    AppendBits<4>(base, layout_, bits.data());
  } else {
    AppendBits<2>(base, layout_, bits.data());
  }
  return bits;
}

std::string Tensor::DebugString() const {
  return absl::StrCat(DTypeName(dtype_), " ", layout_.DebugString());
}

}  // namespace kvcheck
