#include "src/cache/concat_cache.h"

#include "src/base/checked_math.h"
#include "src/base/status_macros.h"
#include "src/cache/cache_buffers.h"
#include "src/tensor/copy_ops.h"

namespace kvcheck {

absl::StatusOr<std::unique_ptr<KvCache>> ConcatCache::Create(const CacheConfig& config) {
  KV_ASSIGN_OR_RETURN(const int64_t budget, StorageBudget("concat", config));
  return std::unique_ptr<KvCache>(new ConcatCache(budget));
}

std::unique_ptr<KvCache> ConcatCache::Fork() const {
  return std::unique_ptr<KvCache>(new ConcatCache(*this));
}

absl::Status ConcatCache::DoAppend(const Tensor& k, const Tensor& v,
                                   absl::Span<const bool> /*active: all rows*/) {
  const int64_t element_size = DTypeSize(k.dtype());
  // The cache holds exactly its tokens: (length + S) slots.
  const std::optional<int64_t> held =
      CheckedMul(seq_len() + k.dim(2), cache_internal::SlotBytes(*shape()));
  KV_RETURN_IF_ERROR(cache_internal::CheckStorageBudget(name(), held, budget_));
  Tensor k_next, v_next;
  if (seq_len() == 0) {
    // Always a copy, even of a contiguous input: the cache must not share the caller's
    // storage (the caller may write to it later).
    k_next = k.DeepCopy();
    v_next = v.DeepCopy();
  } else {
    KV_ASSIGN_OR_RETURN(k_next, Cat({k_, k}, 2));
    KV_ASSIGN_OR_RETURN(v_next, Cat({v_, v}, 2));
    counters_.bytes_other_copied += 2 * k_.num_elements() * element_size;
  }
  counters_.bytes_allocated += 2 * k_next.num_elements() * element_size;
  counters_.bytes_held = *held;
  k_ = std::move(k_next);
  v_ = std::move(v_next);
  return absl::OkStatus();
}

absl::StatusOr<CacheView> ConcatCache::DoView() const {
  return CacheView{k_, v_, {}};  // slot j holds position j
}

void ConcatCache::DoReset() {
  k_ = Tensor();
  v_ = Tensor();
  counters_.bytes_held = 0;
}

}  // namespace kvcheck
