#include "src/tensor/storage.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "src/base/checked_math.h"

namespace kvcheck {
namespace {

constexpr int64_t kAlignment = 64;
int64_t max_storage_bytes = int64_t{8} << 30;

}  // namespace

int64_t MaxStorageBytes() { return max_storage_bytes; }
void SetMaxStorageBytes(int64_t bytes) { max_storage_bytes = bytes; }

void Storage::FreeDeleter::operator()(std::byte* p) const {
  if (owned) std::free(p);
}

std::shared_ptr<Storage> Storage::Borrow(DType dtype, std::byte* bytes, int64_t num_elements) {
  return std::shared_ptr<Storage>(new Storage(
      dtype, num_elements, std::unique_ptr<std::byte[], FreeDeleter>(bytes, FreeDeleter{false})));
}

absl::Status Storage::Detach() {
  if (!borrowed()) return absl::OkStatus();
  const size_t size = static_cast<size_t>(num_bytes());
  // Aligned like Allocate's buffers (SIMD loads of the copy).
  const size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;
  std::unique_ptr<std::byte[], FreeDeleter> copy(
      static_cast<std::byte*>(std::aligned_alloc(kAlignment, rounded > 0 ? rounded : kAlignment)),
      FreeDeleter{true});
  if (copy == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("storage: cannot allocate ", size, " bytes to detach a borrowed buffer"));
  }
  if (size > 0) std::memcpy(copy.get(), bytes_.get(), size);
  bytes_ = std::move(copy);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<Storage>> Storage::Allocate(DType dtype, int64_t num_elements) {
  return AllocateBytes(dtype, num_elements, /*zero=*/true);
}

absl::StatusOr<std::shared_ptr<Storage>> Storage::AllocateUninitialized(DType dtype,
                                                                        int64_t num_elements) {
  return AllocateBytes(dtype, num_elements, /*zero=*/false);
}

absl::StatusOr<std::shared_ptr<Storage>> Storage::AllocateBytes(DType dtype, int64_t num_elements,
                                                                bool zero) {
  if (num_elements < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("storage: element count ", num_elements, " is negative"));
  }
  std::optional<int64_t> bytes = CheckedMul(num_elements, DTypeSize(dtype));
  if (!bytes) {
    return absl::InvalidArgumentError(absl::StrCat("storage: ", num_elements, " ", DTypeName(dtype),
                                                   " elements overflow an int64 byte count"));
  }
  if (*bytes > max_storage_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("storage: ", *bytes, " bytes requested, limit is ", max_storage_bytes));
  }
  // Exactly the requested bytes (at least 1), so that ASan sees any read past the end.
  const size_t size = static_cast<size_t>(*bytes > 0 ? *bytes : 1);
  // Large buffers start on a huge page, and their whole huge pages are advised before the
  // first touch (the zeroing, or the creator's writes), so that the kernel can back them with
  // 2 MiB pages: a hardware prefetcher stops at every 4 KiB page boundary, and a decode over
  // K and V from memory reads them as streams. 30 layers of (1, 3, 4096, 64) f32 K/V on a
  // Zen 4 VM (bench/attention_benchmark BM_DecodePairedLayers, six alternating pairs): the
  // flash decode 0.814x the time with this, faster in 5 of 6; the streaming read of the same
  // bytes 16.2 -> 21.8 GB/s. Only whole huge pages inside the buffer are advised, so no page
  // is backed past its end.
  const size_t huge = static_cast<size_t>(kHugePageBytes);
  const bool large = size >= huge;
  void* raw = nullptr;
  if (posix_memalign(&raw, large ? huge : static_cast<size_t>(kAlignment), size) != 0 ||
      raw == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("storage: allocation of ", *bytes, " bytes failed"));
  }
  if (large) (void)madvise(raw, size / huge * huge, MADV_HUGEPAGE);  // advice: errors ignored
  if (zero) std::memset(raw, 0, size);
  return std::shared_ptr<Storage>(
      new Storage(dtype, num_elements,
                  std::unique_ptr<std::byte[], FreeDeleter>(static_cast<std::byte*>(raw))));
}

}  // namespace kvcheck
