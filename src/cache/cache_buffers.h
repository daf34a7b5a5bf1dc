// File: cache_buffers.h
// Building blocks the cache strategies share: buffer allocation with NaN poisoning of
// unused capacity, ring-slot arithmetic, and the copy-on-write token behind cheap Forks.
#ifndef KVCHECK_SRC_CACHE_CACHE_BUFFERS_H_
#define KVCHECK_SRC_CACHE_CACHE_BUFFERS_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "src/base/poison_unused.h"
#include "src/cache/copy_tokens.h"
#include "src/cache/kv_cache.h"
#include "src/cache/slot_buffers.h"
#include "src/tensor/tensor.h"

namespace kvcheck::cache_internal {

// A new buffer of `shape`, counted in counters.bytes_allocated. In test builds
// (kPoisonUnused) every element is NaN, so a read of a slot that was never written
// shows up as NaN in attention; otherwise zeros.
absl::StatusOr<Tensor> AllocateBuffer(DType dtype, absl::Span<const int64_t> shape,
                                      CacheCounters& counters);

// Sets every element of `view` to NaN (through shared storage).
void FillNaN(const Tensor& view);

// The storage budget (CacheConfig::max_bytes) is one number per cache for every buffer it
// holds, so that a cache of many small blocks reaches it like one of a single big buffer.
// Strategies compute what they would hold after an operation and check it first.
//
// Checks that holding `bytes` bytes (nullopt: the count overflowed) stays within `budget`.
// Errors: kResourceExhausted naming the strategy, the bytes and the budget.
absl::Status CheckStorageBudget(const char* strategy, std::optional<int64_t> bytes, int64_t budget);

// Bytes one token slot takes in a cache's K and V buffers: 2 * B * KH * D * element size, or
// INT64_MAX when that overflows (a zero-stride input; no budget admits it).
int64_t SlotBytes(const KvShape& shape);

// The capacity (slots per row) a growing buffer moves to when `needed` slots do not fit in
// `capacity`: max(initial, needed) on the first allocation (capacity 0), else
// max(needed, 2 * capacity) (geometric: amortised O(1) copying), clamped to the slots the
// budget allows. Errors: kResourceExhausted if even `needed` slots exceed the budget.
absl::StatusOr<int64_t> GrownCapacity(const char* strategy, int64_t capacity, int64_t initial,
                                      int64_t needed, int64_t slot_bytes, int64_t budget);

// New K and V buffers (B, KH, window, D) for a window cache (ring, scattered) that must own
// new ones: on its first append, or to copy on write after a Fork, when `old` holds the
// contents to carry over (copied in; `old` may be empty). Checks the storage budget first;
// counts the allocation and the copy in `counters` and sets its bytes_held. On error nothing
// was counted that matters: the caller passes a copy of its counters and keeps it only on
// success, and its members stay as they were.
absl::StatusOr<SlotBuffers> NewWindowBuffers(const char* strategy, const KvShape& shape,
                                             int64_t window, int64_t budget, const SlotBuffers& old,
                                             CacheCounters& counters);

// The ring slot of position p >= 0: p % window, without the 64-bit division (tens of cycles,
// twice per decode step) while p < window, i.e. until the ring wraps.
inline int64_t RingSlot(int64_t position, int64_t window) {
  return position < window ? position : position % window;
}

// The position held by ring slot `slot` once `length` >= window tokens were appended: the
// unique p in [length - window, length) with p % window == slot.
inline int64_t RingSlotPosition(int64_t slot, int64_t length, int64_t window) {
  const int64_t first = length - window;
  return first + ((slot - first % window) % window + window) % window;
}

// Writes the last min(S, W) tokens of `chunk` (.., S, D) into the ring `buffer` (.., W, D)
// along dimension 2, token at position p into slot p % W, given `length_before` tokens were
// appended before the chunk. Wraps in at most two copies.
// REQUIRES: as CopyTokens.
void WriteRingChunk(const Tensor& buffer, const Tensor& chunk, int64_t length_before,
                    int64_t window);

// A step written in place into a ring's K and V buffers (.., W, D), `length_before` tokens
// appended before it: a decode step (S == 1) through SlotBuffers::Write, a longer chunk
// through WriteRingChunk; then the slot the next token goes to is prefetched for writing (its
// stores would otherwise wait for the cold line in the next append). The ring and scattered
// caches' common step. REQUIRES: as CopyTokens, for K and for V; buffers.slots() == window.
void WriteRingStep(const Tensor& k, const Tensor& v, const SlotBuffers& buffers,
                   int64_t length_before, int64_t window);

// Copy-on-write flag behind cheap Forks, for strategies whose views share the cache's
// buffers. Fork marks both caches (the original through a mutable member, since Fork is
// const); the next write of either first copies the buffers. A reference count would not do
// for them: once the original resets, the fork would hold the only reference and write in
// place, changing views the original returned before the fork. A reference count does do
// when the returned views are copies (the paged cache gathers its blocks into new tensors):
// then nothing outside the caches can see a buffer, and a block whose count is 1 is the
// writer's alone (paged_cache.h copies on write per block that way).
class CopyOnWrite {
 public:
  void MarkShared() const { shared_ = true; }
  bool shared() const { return shared_; }
  void Clear() { shared_ = false; }

 private:
  mutable bool shared_ = false;
};

}  // namespace kvcheck::cache_internal

#endif  // KVCHECK_SRC_CACHE_CACHE_BUFFERS_H_
