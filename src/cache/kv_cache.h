// File: kv_cache.h
// KvCache: the interface every cache strategy implements, and the cache contract that the
// properties check it against.
//
// A cache holds, per batch row b and KV head h, rows of keys and values of width D.
//   - Positions: each appended token gets position p = tokens appended to its batch row since
//     the last reset (0-based).
//   - Visible set: a full cache shows positions [0, n); a window-W cache [max(0, n - W), n),
//     exactly W keys once full, never W + 1.
//   - Append(k, v) takes (B, KH, S, D) tensors with any strides (transposed and narrowed views
//     included) and returns the visible K and V with the position of every slot (slot order
//     may differ from position order, e.g. after a ring wraps). B, KH, D and the dtype are
//     fixed by the first append after construction or Reset. S = 0 is a no-op.
//   - Fork() returns an independent cache: appends to either never change what the other
//     returns, including views returned before the fork.
//   - Reset() forgets everything; the next append starts at position 0.
//   - Errors leave the cache exactly as it was (K and V together), with these codes:
//       kInvalidArgument    rank != 4, k and v shapes or dtypes differ, B, KH or D is 0,
//                           `active` has the wrong length;
//       kFailedPrecondition B, KH, D or dtype differ from those fixed by the first append;
//       kUnimplemented      an inactive row for a strategy with one length for all rows;
//       kOutOfRange         a row would pass kMaxSequenceLength tokens since reset;
//       kResourceExhausted  the cache's buffers would hold more than its storage budget
//                           (CacheConfig::max_bytes, else the storage limit of storage.h), or
//                           an allocation failed.
//   - Growth of preallocated buffers copies amortised O(1) bytes per appended byte; the
//     counters let properties check it.
//   - capacity(): the tokens every batch row can hold in the buffers the cache has now,
//     without allocating: 0 before the first append and after Reset (which releases every
//     buffer: counters().bytes_held is 0 then), the window W for window strategies, and at
//     least every row's length otherwise.
//
// Returned tensors may be views of the cache's buffers: they stay valid (they share storage),
// and later appends never change the slots they show, except that a window cache reuses its
// slots (a view returned before the ring wrapped past a slot shows that slot's new token).
//
// Implementations are not thread-safe; one cache per sequence (or per layer) per thread.
#ifndef KVCHECK_SRC_CACHE_KV_CACHE_H_
#define KVCHECK_SRC_CACHE_KV_CACHE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "src/cache/cache_config.h"
#include "src/cache/cache_view.h"
#include "src/tensor/tensor.h"

namespace kvcheck {

namespace cache_internal {
class SlotBuffers;
}  // namespace cache_internal

// The most tokens a batch row may receive between resets (about 10^12): positions and
// capacities stay far from int64_t overflow.
inline constexpr int64_t kMaxSequenceLength = int64_t{1} << 40;

// The shape fixed by the first append.
struct KvShape {
  int64_t batch = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  DType dtype = DType::kF32;
  bool operator==(const KvShape&) const = default;
};

// What a cache's buffers cost, since construction (a Fork starts from its parent's; Reset
// keeps them, bytes_held excepted). Appends count (and a Fork that copies at once counts
// that in the new cache); View, failed appends and a Fork's parent change nothing. The cache
// state machine holds every strategy that reports them to these laws: the four totals never
// go down; an append (or Fork) copies only into buffers it allocated then, and holds only
// what it held before or allocated then; growth copies come only with a larger capacity;
// a strategy with amortised growth copies nothing else, and replaces no buffer while its
// capacity stays the same, unless a Fork since its last Reset may share its buffers.
struct CacheCounters {
  int64_t bytes_allocated = 0;      // every buffer ever allocated, K and V (not views: a
                                    // paged view's gathered copy belongs to its caller)
  int64_t bytes_held = 0;           // the buffers the cache holds now (shared ones included)
  int64_t bytes_appended = 0;       // input bytes the appends were given (K and V)
  int64_t bytes_growth_copied = 0;  // old contents copied into a grown buffer
  int64_t bytes_other_copied = 0;   // other copies into new buffers: concat's cat,
                                    // copy-on-write after a Fork
};

class KvCache {
 public:
  virtual ~KvCache() = default;
  KvCache& operator=(const KvCache&) = delete;

  // The strategy's registry name ("prealloc", "ring", ...).
  virtual const char* name() const = 0;

  // Appends S tokens to every batch row.
  absl::StatusOr<CacheView> Append(const Tensor& k, const Tensor& v);
  // Appends S tokens to the rows with active[b] true; inactive rows neither write nor
  // advance. Only strategies with supports_inactive_rows() accept a false flag.
  absl::StatusOr<CacheView> AppendActive(const Tensor& k, const Tensor& v,
                                         absl::Span<const bool> active);
  // As Append / AppendActive, with the visible set written into `view` instead of returned:
  // on success `view` holds exactly what they would return; on error it is unchanged (and the
  // cache too). For a decode loop that keeps one CacheView per cache and passes it to every
  // append: while the cache's buffers stay the same, the view's tensors are updated in place
  // (their layouts copied, no reference count touched, positions kept in their capacity).
  // `view` may hold anything before (a default CacheView, a view of another cache); views
  // copied from it earlier stay as they were.
  absl::Status AppendInto(const Tensor& k, const Tensor& v, CacheView& view);
  absl::Status AppendActiveInto(const Tensor& k, const Tensor& v, absl::Span<const bool> active,
                                CacheView& view);

  // The visible K, V and positions without appending (empty tensors before the first append).
  // Errors: kResourceExhausted where the strategy must allocate to build the view (paged).
  absl::StatusOr<CacheView> View() const;

  virtual std::unique_ptr<KvCache> Fork() const = 0;
  void Reset();

  // Tokens appended to batch row 0 (every row, unless rows advance independently) since the
  // last reset.
  int64_t seq_len() const { return row_seq_len(0); }
  // REQUIRES: 0 <= b < B once the shape is fixed; 0 before the first append.
  int64_t row_seq_len(int64_t b) const { return shape_.has_value() ? row_lengths_[b] : 0; }
  // Slots per row in the current buffers (0 before the first append).
  virtual int64_t capacity() const = 0;
  virtual bool supports_inactive_rows() const { return false; }
  // A cache of an external engine (src/engine/external_cache.h) sends an append straight to
  // the engine, past the checks of Append, and returns the engine's answer: the bad-call laws
  // send calls the contract forbids and expect the engine itself to refuse them and keep its
  // state. Built-in caches return nullopt (their refusal is Append's own). The cache's own
  // bookkeeping is not touched.
  virtual std::optional<absl::Status> AppendUnchecked(const Tensor& k, const Tensor& v) {
    (void)k;
    (void)v;
    return std::nullopt;
  }
  const std::optional<KvShape>& shape() const { return shape_; }
  // Virtual so that an external engine's cache (src/engine/external_cache.h) can fetch its
  // counters when they are read rather than after every operation.
  virtual const CacheCounters& counters() const { return counters_; }

 protected:
  KvCache() = default;
  KvCache(const KvCache&) = default;

  // Writes the new tokens. Called with validated input: S > 0, shape_ already equal to the
  // input's (set before the call on the first append), row lengths not yet advanced.
  // Must either succeed completely or leave every member unchanged.
  virtual absl::Status DoAppend(const Tensor& k, const Tensor& v,
                                absl::Span<const bool> active) = 0;
  // The visible set. REQUIRES: shape_ is set.
  // May fail (kResourceExhausted) only in a strategy whose DoAppend never overwrites a token
  // that was visible before (no window): when the view of an append fails, Append restores
  // the row lengths and counters, so the cache shows exactly what it showed before.
  virtual absl::StatusOr<CacheView> DoView() const = 0;
  // Writes the visible set into `view`, leaving `view` unchanged when it fails (the same
  // failures as DoView). The default assigns DoView's result. Strategies whose view is their
  // buffers narrowed override it (cache_internal::SlotBuffers::ViewInto) and return
  // NewViewInto() from DoView.
  virtual absl::Status DoViewInto(CacheView& view) const;
  // DoViewInto into a new CacheView, built inside the returned StatusOr.
  absl::StatusOr<CacheView> NewViewInto() const;
  // Drops the buffers (shape_ and row lengths are cleared by Reset itself).
  virtual void DoReset() = 0;
  // The decode fast path: the buffers the next step of one token to every row (each row
  // contiguous) may be written into in place, at slot seq_len() when that is below their
  // slots(), with exactly this effect: DoAppend would write there and change nothing else,
  // and DoViewInto would then be the buffers narrowed to the new length with no position
  // table. KvCache then writes and views through them itself, without DoAppend and
  // DoViewInto. nullptr where such a step needs the strategy (no buffers yet, a copy-on-write
  // pending after a Fork, rows of different lengths). Default: nullptr.
  virtual const cache_internal::SlotBuffers* InPlaceStepBuffers() const { return nullptr; }

  // Row lengths and counters as of the last successful append.
  const std::vector<int64_t>& row_lengths() const { return row_lengths_; }
  // The storage budget in bytes: config.max_bytes, or the storage limit when that is 0.
  // Errors: kInvalidArgument (naming `strategy`) for a negative max_bytes.
  static absl::StatusOr<int64_t> StorageBudget(const char* strategy, const CacheConfig& config);
  CacheCounters counters_;

 private:
  // True when (k, v, active) passes every check of AppendActive and appends S > 0 tokens to
  // every row of a cache whose shape is fixed: the decode step, checked in a few compares
  // before the full validation (which an input that is not such a step goes through).
  bool IsNextStep(const Tensor& k, const Tensor& v, absl::Span<const bool> active) const;
  // For a step IsNextStep accepted: writes it through InPlaceStepBuffers, advances every row
  // by one and views, and returns true; false (nothing done) where that path does not apply.
  bool TryInPlaceStep(const Tensor& k, const Tensor& v, CacheView& view);
  // AppendActiveInto's body (also AppendInto's): the fast step through TryInPlaceStep, else
  // Commit for another step IsNextStep accepts, else AppendOther.
  absl::Status AppendIntoInline(const Tensor& k, const Tensor& v, absl::Span<const bool> active,
                                CacheView& view);
  // AppendActiveInto for what IsNextStep does not accept: validation, S == 0, the first
  // append after construction or Reset.
  absl::Status AppendOther(const Tensor& k, const Tensor& v, absl::Span<const bool> active,
                           CacheView& view);
  // The checks of AppendActive, in the order that decides which error an input gets.
  absl::Status Validate(const Tensor& k, const Tensor& v, absl::Span<const bool> active) const;
  // DoAppend, then AdvanceAndView; `first`: the shape was fixed by this append (a failure
  // clears it again).
  absl::Status Commit(const Tensor& k, const Tensor& v, absl::Span<const bool> active, bool first,
                      CacheView& view);
  // Advances the active rows by S and writes DoViewInto into `view`, restoring the lengths
  // and counters if the view fails.
  absl::Status AdvanceAndView(int64_t seq, absl::Span<const bool> active, bool first,
                              CacheView& view);

  std::optional<KvShape> shape_;
  std::vector<int64_t> row_lengths_;
};

}  // namespace kvcheck

#endif  // KVCHECK_SRC_CACHE_KV_CACHE_H_
