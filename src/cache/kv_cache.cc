#include "src/cache/kv_cache.h"

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/cache/slot_buffers.h"
#include "src/tensor/storage.h"

namespace kvcheck {
namespace {

template <typename... Parts>
std::string Message(const char* strategy, const Parts&... parts) {
  return absl::StrCat(strategy, " append: ", parts...);
}

}  // namespace

// The decode step's path, defined before AppendActive and inline so that it compiles into
// it: a call per helper cost about 45 of the 290 instructions a decode append spent outside
// its copies and its view (callgrind).

[[gnu::always_inline]] inline bool KvCache::IsNextStep(const Tensor& k, const Tensor& v,
                                                       absl::Span<const bool> active) const {
  if (!shape_.has_value() || k.rank() != 4 || v.rank() != 4) return false;
  const KvShape& fixed = *shape_;
  // The fixed shape was validated (B, KH, D >= 1), so matching it covers those checks too.
  // Each dimension of both against the fixed shape (and S against each other): fewer
  // instructions than k.shape() == v.shape(), whose loop the compiler keeps.
  if (k.dtype() != fixed.dtype || v.dtype() != fixed.dtype || k.dim(0) != fixed.batch ||
      v.dim(0) != fixed.batch || k.dim(1) != fixed.num_kv_heads || v.dim(1) != fixed.num_kv_heads ||
      k.dim(3) != fixed.head_dim || v.dim(3) != fixed.head_dim || k.dim(2) != v.dim(2)) {
    return false;
  }
  const int64_t seq = k.dim(2);
  if (seq <= 0) return false;
  if (!active.empty()) {
    if (static_cast<int64_t>(active.size()) != fixed.batch) return false;
    for (bool a : active) {
      if (!a) return false;  // inactive rows: the strategy decides (Validate)
    }
  }
  for (int64_t length : row_lengths_) {
    if (seq > kMaxSequenceLength - length) return false;
  }
  return true;
}

[[gnu::always_inline]] inline bool KvCache::TryInPlaceStep(const Tensor& k, const Tensor& v,
                                                           CacheView& view) {
  const cache_internal::SlotBuffers* buffers = InPlaceStepBuffers();
  if (buffers == nullptr) return false;
  const int64_t slot = row_lengths_[0];  // every row's: InPlaceStepBuffers' contract
  if (slot >= buffers->slots() || !buffers->IsRowStep(k, v)) return false;
  // The next step's lines are asked for first, so that their fetch overlaps this step's
  // bookkeeping as well as its copies. Paired append benchmark (Zen 4 VM, four alternating
  // pairs of builds, 2026-12-04): `prealloc` 1.16-1.18x of its floor and `scattered`
  // 1.16-1.21x, against 1.23-1.25x and 1.23-1.26x with the prefetch in WriteStep, after the
  // view update. Asking before IsNextStep's checks measured the same as here. Except for a
  // layout whose next slot follows this one in one run (interleaved) on a CPU where asking
  // after the copies pays (Zen 2): WriteStep asks then (SlotBuffers::prefetches_after_write).
  const bool prefetch_first = !buffers->prefetches_after_write();
  if (prefetch_first) buffers->PrefetchSlotInline(slot + 1);
  // WriteStep cannot fail, so the order is free: lengths, counters and view first, then the
  // copies (the append benchmark measured the same either way).
  for (int64_t& length : row_lengths_) ++length;
  counters_.bytes_appended += 2 * k.num_elements() * DTypeSize(k.dtype());
  buffers->ViewInto(slot + 1, view);
  buffers->WriteStep(k, v, slot, prefetch_first ? -1 : slot + 1);
  return true;
}

inline absl::Status KvCache::AdvanceAndView(int64_t seq, absl::Span<const bool> active, bool first,
                                            CacheView& view) {
  int64_t active_rows = 0;
  for (size_t b = 0; b < row_lengths_.size(); ++b) {
    if (active.empty() || active[b]) {
      row_lengths_[b] += seq;
      ++active_rows;
    }
  }
  const int64_t appended =
      2 * active_rows * shape_->num_kv_heads * seq * shape_->head_dim * DTypeSize(shape_->dtype);
  counters_.bytes_appended += appended;
  absl::Status status = DoViewInto(view);
  if (!status.ok()) {
    // Only strategies that never overwrite a visible token may fail here (kv_cache.h): the
    // written slots lie past the restored lengths, so the cache shows what it showed before.
    // Only this append's bytes_appended is taken back (DoAppend's own counts stay).
    for (size_t b = 0; b < row_lengths_.size(); ++b) {
      if (active.empty() || active[b]) row_lengths_[b] -= seq;
    }
    counters_.bytes_appended -= appended;
    if (first) {
      shape_.reset();
      row_lengths_.clear();
    }
  }
  return status;
}

inline absl::Status KvCache::Commit(const Tensor& k, const Tensor& v, absl::Span<const bool> active,
                                    bool first, CacheView& view) {
  if (absl::Status status = DoAppend(k, v, active); !status.ok()) {
    if (first) {
      shape_.reset();
      row_lengths_.clear();
    }
    return status;
  }
  return AdvanceAndView(k.dim(2), active, first, view);
}

absl::StatusOr<CacheView> KvCache::Append(const Tensor& k, const Tensor& v) {
  return AppendActive(k, v, {});
}

absl::StatusOr<CacheView> KvCache::AppendActive(const Tensor& k, const Tensor& v,
                                                absl::Span<const bool> active) {
  // One named StatusOr, returned on every path: the view is built where the caller receives
  // it (no move of the CacheView on the way out).
  absl::StatusOr<CacheView> result(absl::in_place);
  if (absl::Status status = AppendActiveInto(k, v, active, *result); !status.ok()) {
    result = std::move(status);
  }
  return result;
}

// AppendActiveInto's body, inline in it and in AppendInto: the decode step is then one
// function's saved registers instead of three (AppendInto calling AppendActiveInto calling
// TryInPlaceStep; callgrind: 704 -> 683 instructions per prealloc step), and nothing is
// checked twice.
[[gnu::always_inline]] inline absl::Status KvCache::AppendIntoInline(const Tensor& k,
                                                                     const Tensor& v,
                                                                     absl::Span<const bool> active,
                                                                     CacheView& view) {
  // The common case first: a decode or prefill step of the fixed shape passes every check in
  // a few compares, and the full validation below runs only for what is not such a step.
  if (IsNextStep(k, v, active)) {
    if (k.dim(2) == 1 && TryInPlaceStep(k, v, view)) return absl::OkStatus();
    return Commit(k, v, active, /*first=*/false, view);
  }
  return AppendOther(k, v, active, view);
}

absl::Status KvCache::AppendInto(const Tensor& k, const Tensor& v, CacheView& view) {
  return AppendIntoInline(k, v, {}, view);
}

absl::Status KvCache::AppendActiveInto(const Tensor& k, const Tensor& v,
                                       absl::Span<const bool> active, CacheView& view) {
  return AppendIntoInline(k, v, active, view);
}

// Out of line, so that the decode step above is a short function of its own (inlined, this
// path's locals gave AppendActiveInto an 872-byte frame; no time difference was measurable).
[[gnu::noinline]] absl::Status KvCache::AppendOther(const Tensor& k, const Tensor& v,
                                                    absl::Span<const bool> active,
                                                    CacheView& view) {
  KV_RETURN_IF_ERROR(Validate(k, v, active));
  const KvShape input{k.dim(0), k.dim(1), k.dim(3), k.dtype()};
  if (k.dim(2) == 0) {
    if (shape_.has_value()) return DoViewInto(view);  // nothing changed: nor does a failure
    CacheView empty;
    KV_ASSIGN_OR_RETURN(
        empty.k, Tensor::Zeros(input.dtype, {input.batch, input.num_kv_heads, 0, input.head_dim}));
    empty.v = empty.k.DeepCopy();
    view = std::move(empty);
    return absl::OkStatus();
  }
  const bool first = !shape_.has_value();
  if (first) {
    shape_ = input;
    row_lengths_.assign(input.batch, 0);
  }
  return Commit(k, v, active, first, view);
}

absl::Status KvCache::DoViewInto(CacheView& view) const {
  KV_ASSIGN_OR_RETURN(view, DoView());
  return absl::OkStatus();
}

absl::StatusOr<CacheView> KvCache::NewViewInto() const {
  absl::StatusOr<CacheView> result(absl::in_place);
  if (absl::Status status = DoViewInto(*result); !status.ok()) result = std::move(status);
  return result;
}

absl::Status KvCache::Validate(const Tensor& k, const Tensor& v,
                               absl::Span<const bool> active) const {
  if (k.rank() != 4 || v.rank() != 4) {
    return absl::InvalidArgumentError(Message(name(), "k and v must have rank 4 (B, KH, S, D); ",
                                              "got k ", DimsToString(k.shape()), ", v ",
                                              DimsToString(v.shape())));
  }
  if (k.shape() != v.shape() || k.dtype() != v.dtype()) {
    return absl::InvalidArgumentError(Message(name(), "k is ", DTypeName(k.dtype()), " ",
                                              DimsToString(k.shape()), " but v is ",
                                              DTypeName(v.dtype()), " ", DimsToString(v.shape())));
  }
  const KvShape input{k.dim(0), k.dim(1), k.dim(3), k.dtype()};
  const int64_t seq = k.dim(2);
  if (input.batch == 0 || input.num_kv_heads == 0 || input.head_dim == 0) {
    return absl::InvalidArgumentError(Message(
        name(), "zero-size dimension in ", DimsToString(k.shape()), " (B, KH and D must be >= 1)"));
  }
  if (!active.empty() && static_cast<int64_t>(active.size()) != input.batch) {
    return absl::InvalidArgumentError(
        Message(name(), active.size(), " active flags for ", input.batch, " batch rows"));
  }
  bool any_inactive = false;
  for (bool a : active) any_inactive = any_inactive || !a;
  if (any_inactive && !supports_inactive_rows()) {
    return absl::UnimplementedError(Message(name(), "all batch rows share one length; ",
                                            "inactive rows need a per-row strategy (scattered)"));
  }
  if (shape_.has_value() && !(*shape_ == input)) {
    return absl::FailedPreconditionError(
        Message(name(), "got ", DTypeName(input.dtype), " (B, KH, D) = (", input.batch, ", ",
                input.num_kv_heads, ", ", input.head_dim, ") but the cache holds ",
                DTypeName(shape_->dtype), " (", shape_->batch, ", ", shape_->num_kv_heads, ", ",
                shape_->head_dim, ")"));
  }
  for (int64_t b = 0; b < input.batch; ++b) {
    const int64_t length = shape_.has_value() ? row_lengths_[b] : 0;
    if (seq > kMaxSequenceLength - length) {
      return absl::OutOfRangeError(Message(name(), "appending S = ", seq, " to batch row ", b,
                                           " of length ", length, " passes the limit of ",
                                           kMaxSequenceLength, " tokens"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<CacheView> KvCache::View() const {
  if (!shape_.has_value()) return CacheView{};
  return DoView();
}

absl::StatusOr<int64_t> KvCache::StorageBudget(const char* strategy, const CacheConfig& config) {
  // Not "no budget": a negative budget is a caller's mistake, not a request for none.
  if (config.max_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(strategy, ": max_bytes ", config.max_bytes, " is negative (0: the storage limit)"));
  }
  return config.max_bytes > 0 ? config.max_bytes : MaxStorageBytes();
}

void KvCache::Reset() {
  DoReset();
  shape_.reset();
  row_lengths_.clear();
}

}  // namespace kvcheck
