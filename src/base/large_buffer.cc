#include "src/base/large_buffer.h"

#include <sys/mman.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <limits>

#include <sanitizer/asan_interface.h>  // no-op macros without AddressSanitizer

namespace kvcheck {
namespace {

constexpr size_t kAlignment = 64;

// The next large buffer's color, in cache lines: 37 is odd, so 1024 buffers in a row get
// 1024 different colors, and consecutive ones lie 37 lines apart (not neighbouring sets).
size_t NextColorBytes() {
  static std::atomic<uint32_t> large_buffers{0};
  return size_t{64} * (large_buffers.fetch_add(1, std::memory_order_relaxed) * 37u % 1024u);
}

// `bytes` rounded up to whole huge pages. REQUIRES: no overflow (checked by the caller).
size_t WholeHugePages(size_t bytes) {
  return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
}

}  // namespace

void* AllocateLargeAware(size_t size) {
  if (size == 0) size = 1;
  void* raw = nullptr;
  if (size < kLargeBufferBytes) return posix_memalign(&raw, kAlignment, size) == 0 ? raw : nullptr;
  const size_t color = NextColorBytes();
  if (size > std::numeric_limits<size_t>::max() - color - kHugePageBytes) return nullptr;
  const size_t whole = WholeHugePages(color + size);
  if (posix_memalign(&raw, kHugePageBytes, whole) != 0) return nullptr;
  // Advice: errors ignored (a kernel without transparent huge pages gives 4 KiB pages).
  (void)madvise(raw, whole, MADV_HUGEPAGE);
  std::byte* const data = static_cast<std::byte*>(raw) + color;
  ASAN_POISON_MEMORY_REGION(raw, color);
  ASAN_POISON_MEMORY_REGION(data + size, whole - color - size);
  return data;
}

void FreeLargeAware(void* p, size_t size) {
  if (p == nullptr) return;
  if (size == 0) size = 1;
  if (size < kLargeBufferBytes) {
    std::free(p);
    return;
  }
  const uintptr_t start = reinterpret_cast<uintptr_t>(p) & ~(uintptr_t{kHugePageBytes} - 1);
  void* const raw = reinterpret_cast<void*>(start);
  ASAN_UNPOISON_MEMORY_REGION(raw, WholeHugePages(reinterpret_cast<uintptr_t>(p) - start + size));
  std::free(raw);
}

}  // namespace kvcheck
