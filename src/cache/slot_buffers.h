// File: slot_buffers.h
// SlotBuffers: a cache's K and V buffers (B, KH, Cap, D) together with where each slot's
// rows lie in them, taken once when the buffers are made.
//
// A decode step writes one row of D elements per batch row and head. Read through the
// tensors, every such step re-reads four layouts and storage pointers, multiplies strides by
// the element size and re-checks the shapes: about 400 instructions per layer and step beside
// the 170 of the six memcpy calls (callgrind, bench/cache_append_benchmark.cc). Here those
// byte offsets are computed in the constructor, so WriteStep is the copies, their addresses
// and the prefetch of the next slot. KvCache's decode fast path (kv_cache.h,
// InPlaceStepBuffers) writes through it without calling the strategy, and the strategies'
// own in-place writes go through Write.
//
// The buffers are shared (reference counted) like any tensor; a SlotBuffers copy (a Fork's
// copy of its cache) shows the same storage, and the copy-on-write flag of the strategy says
// who may write.
#ifndef KVCHECK_SRC_CACHE_SLOT_BUFFERS_H_
#define KVCHECK_SRC_CACHE_SLOT_BUFFERS_H_

#include <cstddef>
#include <cstdint>

#include "src/cache/cache_view.h"
#include "src/tensor/tensor.h"

namespace kvcheck::cache_internal {

class SlotBuffers {
 public:
  // No buffers: empty(), slots() == 0.
  SlotBuffers() = default;
  // REQUIRES: k_buffer and v_buffer rank 4 of the same shape and dtype (any strides).
  SlotBuffers(Tensor k_buffer, Tensor v_buffer);

  bool empty() const { return k_.rank() != 4; }
  const Tensor& k() const { return k_; }
  const Tensor& v() const { return v_; }
  // Slots per row (Cap; 0 when empty).
  int64_t slots() const { return slots_; }

  // Whether (k, v) is a step WriteStep takes: one token (S == 1), each (b, h) row contiguous
  // in both inputs and in both buffers (stride 1 along D, or D == 1).
  bool IsRowStep(const Tensor& k, const Tensor& v) const {
    return k.dim(2) == 1 && rows_contiguous_ &&
           (head_dim_ == 1 || (k.strides()[3] == 1 && v.strides()[3] == 1));
  }

  // Writes token 0 of every (b, h) row of `k` and `v` (B, KH, 1, D) into slot `slot`:
  // PrefetchSlot(next_slot) first, then one memcpy per row, K's rows then V's. (Prefetching
  // first measured faster for all four layouts on a Zen 4 VM: floor copies of 2.83-3.39
  // against 3.26-3.52 us per 30-layer step, in one run of the append benchmark.)
  // REQUIRES: IsRowStep(k, v); k and v of the buffers' B, KH, D and dtype (validated by the
  // caller); 0 <= slot < slots().
  void WriteStep(const Tensor& k, const Tensor& v, int64_t slot, int64_t next_slot) const;

  // Tokens [0, S) of `k` and `v` (B, KH, S, D, any strides) into slots [slot, slot + S):
  // WriteStep when IsRowStep, else CopyTokens for each (then PrefetchSlot(next_slot)).
  // REQUIRES: as WriteStep, with slot + S <= slots().
  void Write(const Tensor& k, const Tensor& v, int64_t slot, int64_t next_slot) const;

  // Asks the CPU to fetch the lines of slot `slot` of both buffers for every batch row and
  // head: the next decode step writes there, and a slot row of a fresh buffer is rarely in
  // cache (its stores would otherwise wait a memory round trip). A no-op when slot is outside
  // [0, slots()).
  // The lines go to the second-level cache, for reading (prefetcht1 on x86), not to the
  // first level for writing (prefetchw): a 30-layer step asks for 720 lines in bursts of 24
  // per layer, more than the first level keeps in flight, and a store to a line the second
  // level holds exclusively (no other core reads these buffers) needs no memory round trip.
  // In the append benchmark on a Zen 4 VM (alternating builds, one core), a step of
  // `AppendInto` on prealloc took 3.5-4.3 us this way against 6.1-6.4 us with prefetchw, and
  // the floor copies 2.4-3.5 against 5.0-5.2.
  void PrefetchSlot(int64_t slot) const;

  // Writes into `view` the buffers narrowed to slots [0, length), with no position table
  // (cleared, its capacity kept). Each buffer is narrowed into the view's tensor
  // (Tensor::AssignNarrowed): when the view already shows these buffers (the caller's view of
  // the last append, KvCache::AppendInto), that stores the new length and counts only and
  // touches no reference count.
  // REQUIRES: !empty(), 0 <= length <= slots().
  void ViewInto(int64_t length, CacheView& view) const;

 private:
  // PrefetchSlot's loops. REQUIRES: 0 <= slot < slots().
  void PrefetchRows(int64_t slot) const;
  // WriteStep's copies of one tensor's B x KH rows (`from`, byte strides of its dimensions
  // 0 and 1) to `to` (the buffer's row (0, 0) of the slot, and its byte strides), for rows
  // that do not lie at one stride.
  void WriteRows(const std::byte* from, int64_t from_batch, int64_t from_head, std::byte* to,
                 int64_t to_batch, int64_t to_head) const;

  Tensor k_, v_;
  // Byte addresses and strides, from the layouts above: slot 0 of row (0, 0), and the
  // distance between batch rows, heads and slots.
  std::byte* k_base_ = nullptr;
  std::byte* v_base_ = nullptr;
  int64_t k_batch_ = 0, k_head_ = 0, k_slot_ = 0;
  int64_t v_batch_ = 0, v_head_ = 0, v_slot_ = 0;
  int64_t batch_ = 0, heads_ = 0, slots_ = 0, head_dim_ = 0;
  int64_t element_size_ = 0;
  int64_t row_bytes_ = 0;                    // head_dim_ * element size
  int64_t k_row_span_ = 0, v_row_span_ = 0;  // first to last byte of a row (PrefetchSlot)
  // The byte stride between consecutive (b, h) rows of a slot (row b * KH + h), where the
  // B x KH rows lie at one stride; -1 where they do not (WriteStep then loops over b and h).
  int64_t k_row_ = -1, v_row_ = -1;
  bool rows_contiguous_ = false;  // each buffer row contiguous (stride 1 along D, or D == 1)
};

}  // namespace kvcheck::cache_internal

#endif  // KVCHECK_SRC_CACHE_SLOT_BUFFERS_H_
