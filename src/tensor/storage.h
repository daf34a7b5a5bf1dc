// File: storage.h
// Storage: a zero-initialised, 64-byte aligned buffer of elements of one dtype.
//
// Tensors share Storage through std::shared_ptr, the way the engines kvcheck models share
// buffers between a tensor, its views and its copies. A Storage never changes size.
//
// Allocation is bounded: a request over MaxStorageBytes() (default 8 GiB) fails with
// kResourceExhausted instead of reaching the allocator, so hostile sizes (from fuzzers, or an
// overflowing sequence length) are an error, never an abort or an OOM kill.
#ifndef KVCHECK_SRC_TENSOR_STORAGE_H_
#define KVCHECK_SRC_TENSOR_STORAGE_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "src/base/check.h"
#include "src/base/large_buffer.h"
#include "src/tensor/dtype.h"

namespace kvcheck {

class Storage {
 public:
  static constexpr int64_t kHugePageBytes = static_cast<int64_t>(kvcheck::kHugePageBytes);

  // A zeroed buffer of `num_elements` elements of `dtype`, aligned to 64 bytes. A buffer of
  // kHugePageBytes or more lies on transparent huge pages where Linux grants them (its
  // allocation starts on a huge page whose whole huge pages are advised, MADV_HUGEPAGE, before
  // the first touch), its data a different number of cache lines (0 to 1023) into the first:
  // a cache's K and V are streamed by every decode step, and written a row per head per step.
  // Errors: kInvalidArgument if num_elements < 0 or its byte size overflows int64_t;
  // kResourceExhausted if it exceeds MaxStorageBytes() or the allocation fails.
  static absl::StatusOr<std::shared_ptr<Storage>> Allocate(DType dtype, int64_t num_elements);

  // As Allocate, but the bytes are left as the allocator returns them: for a buffer its
  // creator writes in full before anything reads it (a kernel's output), where zeroing would
  // be a wasted pass over memory. Errors: those of Allocate.
  static absl::StatusOr<std::shared_ptr<Storage>> AllocateUninitialized(DType dtype,
                                                                        int64_t num_elements);

  // Memory the caller owns: never freed or zeroed by Storage. REQUIRES: `bytes` holds
  // `num_elements` elements of `dtype` and stays valid (and is not written through another
  // path) while any tensor uses the storage; e.g. an external engine's input for the
  // duration of one call (src/engine/foreign_tensor.h).
  static std::shared_ptr<Storage> Borrow(DType dtype, std::byte* bytes, int64_t num_elements);

  // A borrowed storage takes a private copy of the memory it borrows, so that the tensors
  // over it keep their values after the owner reuses that memory (an engine's view, before
  // kvcheck's next call on that cache: src/engine/plugin_engine.h). No-op for an owned one.
  // Errors: kResourceExhausted when the copy cannot be allocated (the storage is unchanged).
  absl::Status Detach();
  bool borrowed() const { return !bytes_.get_deleter().owned; }

  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  DType dtype() const { return dtype_; }
  int64_t num_elements() const { return num_elements_; }
  int64_t num_bytes() const { return num_elements_ * DTypeSize(dtype_); }

  std::byte* bytes() { return bytes_.get(); }
  const std::byte* bytes() const { return bytes_.get(); }

  // Typed element pointer. REQUIRES: T is the element type of dtype().
  template <typename T>
  T* data() {
    KV_CHECK(DTypeOf<T>() == dtype_);
    return reinterpret_cast<T*>(bytes_.get());
  }
  template <typename T>
  const T* data() const {
    KV_CHECK(DTypeOf<T>() == dtype_);
    return reinterpret_cast<const T*>(bytes_.get());
  }

 private:
  static absl::StatusOr<std::shared_ptr<Storage>> AllocateBytes(DType dtype, int64_t num_elements,
                                                                bool zero);
  struct FreeDeleter {
    FreeDeleter() noexcept : owned(false) {}
    // Memory of AllocateLargeAware(size) (src/base/large_buffer.h), which needs the size back.
    explicit FreeDeleter(size_t size) noexcept : owned(true), bytes(size) {}
    void operator()(std::byte* p) const;
    bool owned;        // false for borrowed memory
    size_t bytes = 0;  // the size it was allocated with
  };
  Storage(DType dtype, int64_t num_elements, std::unique_ptr<std::byte[], FreeDeleter> bytes)
      : dtype_(dtype), num_elements_(num_elements), bytes_(std::move(bytes)) {}

  DType dtype_;
  int64_t num_elements_;
  std::unique_ptr<std::byte[], FreeDeleter> bytes_;
};

// The largest single allocation Storage::Allocate accepts, in bytes.
int64_t MaxStorageBytes();
// Changes the limit (benchmarks with large models raise it). Not thread-safe with allocation.
void SetMaxStorageBytes(int64_t bytes);

}  // namespace kvcheck

#endif  // KVCHECK_SRC_TENSOR_STORAGE_H_
