#include "src/tensor/storage.h"

#include <cstring>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "src/base/checked_math.h"
#include "src/base/large_buffer.h"

namespace kvcheck {
namespace {

int64_t max_storage_bytes = int64_t{8} << 30;

}  // namespace

int64_t MaxStorageBytes() { return max_storage_bytes; }
void SetMaxStorageBytes(int64_t bytes) { max_storage_bytes = bytes; }

void Storage::FreeDeleter::operator()(std::byte* p) const {
  if (owned) FreeLargeAware(p, bytes);
}

std::shared_ptr<Storage> Storage::Borrow(DType dtype, std::byte* bytes, int64_t num_elements) {
  return std::shared_ptr<Storage>(new Storage(
      dtype, num_elements, std::unique_ptr<std::byte[], FreeDeleter>(bytes, FreeDeleter())));
}

absl::Status Storage::Detach() {
  if (!borrowed()) return absl::OkStatus();
  const size_t size = static_cast<size_t>(num_bytes());
  // Placed like Allocate's buffers (aligned for SIMD loads; huge pages when large).
  std::unique_ptr<std::byte[], FreeDeleter> copy(
      static_cast<std::byte*>(AllocateLargeAware(size)), FreeDeleter(size));
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
  // Large buffers lie on huge pages (src/base/large_buffer.h), advised before the first touch
  // (the zeroing, or the creator's writes): a decode reads a cache's K and V as streams.
  // 30 layers of (1, 3, 4096, 64) f32 K/V on a Zen 4 VM (bench/attention_benchmark
  // BM_DecodePairedLayers, six alternating pairs): the flash decode 0.836x the time, faster
  // in 5 of 6; the streaming read of the same bytes 16.2 -> 21.8 GB/s. Buffers of half a
  // huge page or more since (kLargeBufferBytes), not 2 MiB: the generation benchmark's K and
  // V buffers are 1.5 MiB each (12 heads x 512 slots x 64 f32), and on huge pages its decode
  // steps' attention took 0.227 s of 400 steps against 0.270 on one thread (two alternating
  // pairs), 0.154-0.170 against 0.171-0.203 on two (three), Zen 4 VM, 2026-12-05.
  // Each large buffer's data starts at its own color (large_buffer.h): without one, the same
  // slot of every cache's buffers (and each head's rows, 1 MiB apart in a 4096-slot buffer)
  // fell into the same second-level cache sets: a decode step's 720 row lines of 30 layers
  // competed for a few of its sets, and ring's and scattered's AppendInto measured 1.9-2.7x
  // their floor against 1.4-2.1x on 4 KiB pages (alternating runs, append paired benchmark,
  // same VM).
  void* const raw = AllocateLargeAware(size);
  if (raw == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("storage: allocation of ", *bytes, " bytes failed"));
  }
  if (zero) std::memset(raw, 0, size);
  return std::shared_ptr<Storage>(
      new Storage(dtype, num_elements,
                  std::unique_ptr<std::byte[], FreeDeleter>(static_cast<std::byte*>(raw),
                                                            FreeDeleter(size))));
}

}  // namespace kvcheck
