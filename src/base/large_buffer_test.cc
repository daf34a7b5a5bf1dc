#include "src/base/large_buffer.h"

#include <malloc.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace kvcheck {
namespace {

uintptr_t Address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// Sizes at and around the huge-page threshold and a huge page, and far from them.
const size_t kSizes[] = {0,
                         1,
                         64,
                         4096,
                         kLargeBufferBytes - 1,
                         kLargeBufferBytes,
                         kLargeBufferBytes + 1,
                         kHugePageBytes - 1,
                         kHugePageBytes,
                         kHugePageBytes + 1,
                         3 * kHugePageBytes + 100,
                         kHugePageBytes,
                         kHugePageBytes};

// Every buffer is 64-byte aligned and writable to its last byte (ASan and UBSan builds see
// any write past what was allocated), and frees with its size. A large buffer's allocation
// starts at the huge page its data starts in (FreeLargeAware relies on it) and holds the
// color and the whole request: a write past an allocation need not crash in a plain build,
// so its usable size is checked there too.
TEST(LargeBuffer, AlignedAndWritableToTheLastByteAtEverySize) {
  for (size_t size : kSizes) {
    void* p = AllocateLargeAware(size);
    ASSERT_NE(p, nullptr) << size;
    EXPECT_EQ(Address(p) % 64, 0u) << size;
    if (size >= kLargeBufferBytes) {
      const uintptr_t start = Address(p) & ~(uintptr_t{kHugePageBytes} - 1);
      EXPECT_GE(malloc_usable_size(reinterpret_cast<void*>(start)), Address(p) - start + size)
          << size << ": the allocation at " << start << " does not hold the color ("
          << Address(p) - start << " bytes) and the request";
    }
    std::memset(p, 0xab, size);
    if (size > 0) {
      EXPECT_EQ(static_cast<unsigned char*>(p)[size - 1], 0xab) << size;
    }
    FreeLargeAware(p, size);
  }
  FreeLargeAware(nullptr, 0);  // a no-op, as free(nullptr)
}

// Large buffers held at once start at different offsets into their huge page (their
// colors), all below 64 KiB.
TEST(LargeBuffer, LargeBuffersHeldTogetherHaveDistinctColors) {
  std::vector<void*> held;
  std::vector<uintptr_t> offsets;
  for (int i = 0; i < 16; ++i) {
    held.push_back(AllocateLargeAware(kHugePageBytes + 64 * i));
    ASSERT_NE(held.back(), nullptr);
    offsets.push_back(Address(held.back()) % kHugePageBytes);
    EXPECT_LT(offsets.back(), 1024u * 64u);
  }
  std::sort(offsets.begin(), offsets.end());
  EXPECT_EQ(std::unique(offsets.begin(), offsets.end()), offsets.end());
  for (int i = 0; i < 16; ++i) FreeLargeAware(held[i], kHugePageBytes + 64 * i);
}

// The flags of the mapping that holds `address`, from /proc/self/smaps ("" if not found).
std::string VmFlagsOf(uintptr_t address) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> begin >> dash >> end && dash == '-' &&
        line.find(' ') != std::string::npos && line.find(':') > line.find(' ')) {
      inside = begin <= address && address < end;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

// A large buffer's huge pages carry MADV_HUGEPAGE ("hg" in smaps) where the kernel has
// transparent huge pages: the advice reached the kernel, whether or not it can grant the
// pages now (that depends on free memory, so it is not checked).
// Every huge page a large buffer touches, its last included, from the smallest large size
// (half a huge page) to several huge pages and a part; and each of them at its first and its
// last byte: the kernel backs a huge page only where one advised mapping covers all 2 MiB of
// it, and advice that stops short of the allocation's end (at the request's size, say)
// splits the last page's mapping there.
TEST(LargeBuffer, LargeBuffersAreAdvisedForHugePages) {
  if (!std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled").good()) {
    GTEST_SKIP() << "no transparent huge pages in this kernel";
  }
  for (size_t size : {kLargeBufferBytes, kHugePageBytes + 1, 3 * kHugePageBytes + 100}) {
    void* p = AllocateLargeAware(size);
    ASSERT_NE(p, nullptr);
    std::vector<std::string> flags;
    const uintptr_t last = Address(p) + size - 1;
    for (uintptr_t page = Address(p) & ~(uintptr_t{kHugePageBytes} - 1); page <= last;
         page += kHugePageBytes) {
      flags.push_back(VmFlagsOf(page));
      flags.push_back(VmFlagsOf(page + kHugePageBytes - 1));
    }
    FreeLargeAware(p, size);
    for (const std::string& f : flags) {
      ASSERT_FALSE(f.empty()) << size << ": no mapping found in /proc/self/smaps";
      EXPECT_NE(f.find(" hg"), std::string::npos) << size << ": " << f;
    }
  }
}

// Small buffers are not placed on huge-page boundaries (they would waste most of one).
TEST(LargeBuffer, SmallBuffersAreNotRoundedToHugePages) {
  std::vector<void*> held;
  int on_boundary = 0;
  for (int i = 0; i < 8; ++i) {
    held.push_back(AllocateLargeAware(kLargeBufferBytes - 1 - 64 * i));
    ASSERT_NE(held.back(), nullptr);
    on_boundary += Address(held.back()) % kHugePageBytes == 0;
  }
  for (int i = 0; i < 8; ++i) FreeLargeAware(held[i], kLargeBufferBytes - 1 - 64 * i);
  EXPECT_LT(on_boundary, 8);
}

#if defined(__SANITIZE_ADDRESS__)
// The rounding up to whole huge pages hides no overrun from AddressSanitizer: the bytes
// after the request and before it (the color) are poisoned.
TEST(LargeBufferDeathTest, AddressSanitizerSeesPastEitherEnd) {
  const size_t size = kLargeBufferBytes + 100;
  auto* p = static_cast<volatile unsigned char*>(AllocateLargeAware(size));
  ASSERT_NE(p, nullptr);
  EXPECT_DEATH(p[size] = 1, "heap-buffer-overflow|use-after-poison");
  // The first large buffer of a process may have color 0; take one with a color.
  void* second = AllocateLargeAware(size);
  auto* q = static_cast<volatile unsigned char*>(second);
  if (Address(second) % kHugePageBytes != 0) {
    EXPECT_DEATH(q[-1] = 1, "heap-buffer-overflow|use-after-poison");
  }
  FreeLargeAware(second, size);
  FreeLargeAware(const_cast<unsigned char*>(p), size);
}
#endif

}  // namespace
}  // namespace kvcheck
