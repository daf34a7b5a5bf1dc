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
#include <cstring>

#include "src/base/check.h"
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
  [[gnu::always_inline]] bool IsRowStep(const Tensor& k, const Tensor& v) const {
    return k.dim(2) == 1 && rows_contiguous_ &&
           (head_dim_ == 1 || (k.strides()[3] == 1 && v.strides()[3] == 1));
  }

  // Writes token 0 of every (b, h) row of `k` and `v` (B, KH, 1, D) into slot `slot`: one
  // memcpy per row, K's rows then V's, with PrefetchSlot(next_slot) before the copies, or
  // after them where prefetches_after_write() (none for a next_slot outside [0, slots()),
  // such as -1 from the decode step when it prefetched earlier).
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
  // Whether each batch row's slot is one gap-free block of its K and V rows and the next
  // slot's block follows it (the interleaved cache's (B, Cap, KH, 2D) buffer), so that a
  // step writes one forward run of KH * 2 rows per batch row.
  bool slots_one_run() const { return slots_one_run_; }
  // Whether the next slot is asked for after a step's copies rather than before them: for
  // slots_one_run() layouts on CPUs where that measured faster (PrefetchAfterOneRunPays);
  // everywhere else the prefetch goes first.
  bool prefetches_after_write() const { return prefetch_after_write_; }

  // PrefetchSlot inline, for the decode step (KvCache::TryInPlaceStep), which asks for the
  // next slot's lines before its bookkeeping and copies. Always inline: GCC drops calls to a
  // function made only of prefetches (see PrefetchRows below); a first build that called it
  // as a plain inline member had no prefetch in AppendInto and took 2.0-2.3x the floor.
  [[gnu::always_inline]] void PrefetchSlotInline(int64_t slot) const {
    if (slot >= 0 && slot < slots_) PrefetchRows(slot);
  }

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
  bool rows_contiguous_ = false;       // each buffer row contiguous (stride 1 along D, or D == 1)
  bool slots_one_run_ = false;         // see slots_one_run()
  bool prefetch_after_write_ = false;  // see prefetches_after_write()
};

// Whether this CPU writes a slots_one_run() layout's steps faster asking for the next slot
// after the copies than before them: AMD family 17h (Zen, Zen 2), and no other measured.
// For such a block the append benchmark's floor copies were faster prefetching after the copy
// than before it in every run on a Zen 2 VM (2026-12-04: 8.3-11.1 against 10.1-12.5 us per
// 30-layer step, nine runs), while the split layouts were as fast or faster prefetching first
// (scattered: 9.9-11.2 against 11.0-12.6 us), and `interleaved`'s AppendInto took 1.09-1.12x
// the copy-then-prefetch floor this way against 1.29-1.32x prefetching first (four
// alternating pairs of builds); the likely cause, the CPU's own stream prefetcher following a
// forward run of lines into the next slot by itself. On a Zen 4 VM (family 19h) the opposite:
// `interleaved`'s AppendInto took 1.19-1.21x its cached floor prefetching first against
// 1.30-1.31x after (bench/cache_append_paired_benchmark, three alternating pairs of builds,
// 2026-12-05), although the floor's plain copies there had been faster prefetching after in
// two runs of three (2026-12-03): the step is not the floor's copy. Elsewhere (Intel,
// unmeasured) the prefetch goes first, as for every other layout. Only the speed depends on
// it: the bytes written are the same.
bool PrefetchAfterOneRunPays();

// The decode step's path is defined here, inline, so that KvCache::TryInPlaceStep compiles
// into one function: out of line, its calls and their saved registers were about 30 of a
// step's ~800 instructions (callgrind, bench/cache_append_benchmark.cc, prealloc).

// The stride, in elements, between consecutive (b, h) rows of a (B, KH, ., D) layout with
// dimension strides `batch_stride` and `head_stride` when its B x KH rows lie at one stride
// in b-major order (row b * KH + h at that many strides), else -1. A dimension of size 1 may
// have any stride (even one that overflows when scaled to bytes), so its stride is never
// used.
inline int64_t UniformRowStride(int64_t batch, int64_t heads, int64_t batch_stride,
                                int64_t head_stride) {
  if (batch == 1) return heads == 1 ? 0 : head_stride;
  if (heads == 1) return batch_stride;
  int64_t product = 0;
  if (__builtin_mul_overflow(heads, head_stride, &product)) return -1;
  return product == batch_stride ? head_stride : -1;
}

// One line of a row the next step writes, into the second-level cache for reading: the kind
// of prefetch is chosen here once (why this kind: PrefetchSlot above).
[[gnu::always_inline]] inline void PrefetchStepLine(const std::byte* line) {
  __builtin_prefetch(line, /*rw=*/0, /*locality=*/2);
}

// GCC 12 finds a function whose only effects are __builtin_prefetch "pure" and drops calls
// to it whose result (none) is unused: called out of line from WriteStep, this loop was
// never run (no prefetch instruction in WriteStep's code, and the step took twice the time
// of the benchmark's floor). So WriteStep inlines it, and PrefetchSlot is opaque to GCC's
// interprocedural analysis (noipa) for its callers in this file.
[[gnu::always_inline]] inline void SlotBuffers::PrefetchRows(int64_t slot) const {
  const int64_t k_span = k_row_span_, v_span = v_row_span_;
  const std::byte* const k_slot = k_base_ + slot * k_slot_;
  const std::byte* const v_slot = v_base_ + slot * v_slot_;
  if (k_row_ >= 0 && v_row_ >= 0 && k_span == v_span) {
    // Contiguous rows at one stride (WriteStep's common case): one loop over the B x KH rows
    // of both buffers.
    const int64_t rows = batch_ * heads_, k_row_stride = k_row_, v_row_stride = v_row_;
    if (k_span <= 4 * 64) {
      // Up to four lines a row (D <= 64 in f32, 128 in f16): unrolled, as a loop of 1-4 turns
      // per row spent more instructions than its prefetches (callgrind: 68 beside 24).
      const int64_t lines = (k_span + 63) / 64;
      for (int64_t i = 0; i < rows; ++i) {
        const std::byte* k_row = k_slot + i * k_row_stride;
        const std::byte* v_row = v_slot + i * v_row_stride;
        switch (lines) {
          case 4:
            PrefetchStepLine(k_row + 192);
            PrefetchStepLine(v_row + 192);
            [[fallthrough]];
          case 3:
            PrefetchStepLine(k_row + 128);
            PrefetchStepLine(v_row + 128);
            [[fallthrough]];
          case 2:
            PrefetchStepLine(k_row + 64);
            PrefetchStepLine(v_row + 64);
            [[fallthrough]];
          default:
            PrefetchStepLine(k_row);
            PrefetchStepLine(v_row);
        }
      }
      return;
    }
    for (int64_t i = 0; i < rows; ++i) {
      const std::byte* k_row = k_slot + i * k_row_stride;
      const std::byte* v_row = v_slot + i * v_row_stride;
      for (int64_t offset = 0; offset < k_span; offset += 64) {
        PrefetchStepLine(k_row + offset);
        PrefetchStepLine(v_row + offset);
      }
    }
    return;
  }
  for (int64_t b = 0; b < batch_; ++b) {
    for (int64_t h = 0; h < heads_; ++h) {
      const std::byte* k_row = k_slot + b * k_batch_ + h * k_head_;
      const std::byte* v_row = v_slot + b * v_batch_ + h * v_head_;
      for (int64_t offset = 0; offset < k_span; offset += 64) {
        PrefetchStepLine(k_row + offset);
      }
      for (int64_t offset = 0; offset < v_span; offset += 64) {
        PrefetchStepLine(v_row + offset);
      }
    }
  }
}

[[gnu::always_inline]] inline void SlotBuffers::WriteStep(const Tensor& k, const Tensor& v,
                                                          int64_t slot, int64_t next_slot) const {
  // The slot, the one argument the strategy computes: a broken invariant. The shapes were
  // validated against the cache's fixed shape by KvCache, and the buffers were made from it
  // (checking them again here cost 26 of a step's ~800 instructions).
  KV_CHECK(slot >= 0 && slot < slots_);
  const int64_t size = element_size_;
  const Dims& ks = k.strides();
  const Dims& vs = v.strides();
  const std::byte* const k_from = k.storage()->bytes() + k.layout().offset() * size;
  const std::byte* const v_from = v.storage()->bytes() + v.layout().offset() * size;
  std::byte* const k_to = k_base_ + slot * k_slot_;
  std::byte* const v_to = v_base_ + slot * v_slot_;
  const bool prefetch = next_slot >= 0 && next_slot < slots_;
  if (prefetch && !prefetch_after_write_) PrefetchRows(next_slot);
  const int64_t k_from_row = UniformRowStride(batch_, heads_, ks[0], ks[1]);
  const int64_t v_from_row = UniformRowStride(batch_, heads_, vs[0], vs[1]);
  if (k_row_ >= 0 && v_row_ >= 0 && k_from_row >= 0 && v_from_row >= 0) {
    // Rows at one stride in the buffers (every cache's when B = 1, and the contiguous ones'
    // for any B) and in the input (a contiguous one, or a transposed (B, 1, KH, D)): one
    // loop per buffer over the B x KH rows. Everything in locals, as memcpy may write
    // anywhere as far as the compiler knows (members would be re-read after every row); with
    // one loop instead of two nested ones they stay in registers across the calls. (Byte strides of
    // rows that exist: they fit, as the tensors' storage does.) Callgrind, prealloc's step in the
    // append benchmark: 364 -> 299 instructions in WriteStep beside the copies; alternating runs
    // could not tell the time apart.
    const size_t row_bytes = static_cast<size_t>(row_bytes_);
    const int64_t rows = batch_ * heads_;
    const int64_t k_to_row = k_row_, k_from_step = k_from_row * size;
    for (int64_t i = 0; i < rows; ++i) {
      std::memcpy(k_to + i * k_to_row, k_from + i * k_from_step, row_bytes);
    }
    const int64_t v_to_row = v_row_, v_from_step = v_from_row * size;
    for (int64_t i = 0; i < rows; ++i) {
      std::memcpy(v_to + i * v_to_row, v_from + i * v_from_step, row_bytes);
    }
  } else {
    // Rows at two strides (B > 1 and KH > 1 here, so both strides are those of real rows).
    WriteRows(k_from, ks[0] * size, ks[1] * size, k_to, k_batch_, k_head_);
    WriteRows(v_from, vs[0] * size, vs[1] * size, v_to, v_batch_, v_head_);
  }
  if (prefetch && prefetch_after_write_) PrefetchRows(next_slot);
}

[[gnu::always_inline]] inline void SlotBuffers::ViewInto(int64_t length, CacheView& view) const {
  // Stores only what changed (Tensor::AssignNarrowed): when the view shows these buffers
  // already (the caller's view of the last append), the new length and the element counts.
  // No reference count is touched either: each count change is a locked instruction, which
  // also waits for the append's row stores to drain from the store buffer (copying and
  // dropping the view's two tensors cost 1.1-1.5 us per 30-layer step against a 2.7-4.0 us
  // floor in the append benchmark, 2-core Intel Xeon VM).
  view.k.AssignNarrowed(k_, 2, 0, length);
  view.v.AssignNarrowed(v_, 2, 0, length);
  if (!view.positions.empty()) view.positions.clear();
}

}  // namespace kvcheck::cache_internal

#endif  // KVCHECK_SRC_CACHE_SLOT_BUFFERS_H_
