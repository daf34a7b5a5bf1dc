#include "src/base/large_buffer.h"

#include <sys/mman.h>

#include <atomic>
#include <cstdlib>
#include <limits>

namespace kvcheck {
namespace {

constexpr size_t kAlignment = 64;

// The next large buffer's color, in cache lines: 37 is odd, so 1024 buffers in a row get
// 1024 different colors, and consecutive ones lie 37 lines apart (not neighbouring sets).
size_t NextColorBytes() {
  static std::atomic<uint32_t> large_buffers{0};
  return size_t{64} * (large_buffers.fetch_add(1, std::memory_order_relaxed) * 37u % 1024u);
}

}  // namespace

void* AllocateLargeAware(size_t size) {
  if (size == 0) size = 1;
  const bool large = size >= kHugePageBytes;
  const size_t color = large ? NextColorBytes() : 0;
  if (size > std::numeric_limits<size_t>::max() - color) return nullptr;
  void* raw = nullptr;
  if (posix_memalign(&raw, large ? kHugePageBytes : kAlignment, size + color) != 0) {
    return nullptr;
  }
  if (!large) return raw;
  // Advice: errors ignored (a kernel without transparent huge pages gives 4 KiB pages).
  (void)madvise(raw, (size + color) / kHugePageBytes * kHugePageBytes, MADV_HUGEPAGE);
  return static_cast<std::byte*>(raw) + color;
}

void FreeLargeAware(void* p, size_t size) {
  if (p == nullptr) return;
  if (size == 0) size = 1;
  if (size < kHugePageBytes) {
    std::free(p);
    return;
  }
  const uintptr_t start = reinterpret_cast<uintptr_t>(p) & ~(uintptr_t{kHugePageBytes} - 1);
  std::free(reinterpret_cast<void*>(start));
}

}  // namespace kvcheck
