// File: large_buffer.h
// Memory for buffers that are streamed: a tensor's storage (src/tensor/storage.h) and the
// arena of a decoder's weights (src/model/decoder_weights.h), which a decode step reads once.
//
// AllocateLargeAware(size) returns `size` bytes aligned to 64. A request of kLargeBufferBytes
// (half a huge page) or more is placed so that transparent huge pages can back all of it: the
// allocation starts on a 2 MiB boundary, is rounded up to whole huge pages (so at most twice
// the request, and less than one huge page more), and is advised (MADV_HUGEPAGE) before
// anything touches it. A hardware prefetcher stops at every 4 KiB page boundary and every
// 4 KiB page is a TLB entry, so a stream through 4 KiB pages reads slower than one through
// huge pages (numbers where each user decided: storage.cc, decoder.cc). Under AddressSanitizer
// the bytes of the allocation outside the request are poisoned, so a read or write past
// either end is still reported.
//
// The data of a large buffer does not start at its huge page but a "color" of 0 to 1023 cache
// lines after it, a different one for each large buffer: on huge pages the low 21 bits of a
// physical address are the virtual ones, so without it the same offset of every buffer falls
// into the same second-level cache sets (why this mattered: storage.cc).
//
// FreeLargeAware(p, size) frees such a buffer given the same size. The color is below 2 MiB
// and a large allocation starts on a 2 MiB boundary, so the allocation's start is the data
// pointer rounded down to one, and its length follows from the size: nothing else needs to be
// kept.
#ifndef KVCHECK_SRC_BASE_LARGE_BUFFER_H_
#define KVCHECK_SRC_BASE_LARGE_BUFFER_H_

#include <cstddef>
#include <cstdint>

namespace kvcheck {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;
// The smallest request placed on huge pages. Half a huge page: the rounding up then at most
// doubles a buffer's memory. A decode step reads every layer's K and V cache buffers, and at
// 1.5 MiB each (the 124M model's 12 heads x 512 slots x 64 f32) they sat on 4 KiB pages below
// the 2 MiB this was before: on huge pages the generation benchmark's attention took 0.84x
// the time (storage.cc).
inline constexpr size_t kLargeBufferBytes = kHugePageBytes / 2;

// nullptr when the allocator fails (or the rounded size overflows). size 0 is allocated as 1 byte.
void* AllocateLargeAware(size_t size);
// REQUIRES: p from AllocateLargeAware(size) with this size (or nullptr: no-op).
void FreeLargeAware(void* p, size_t size);

}  // namespace kvcheck

#endif  // KVCHECK_SRC_BASE_LARGE_BUFFER_H_
