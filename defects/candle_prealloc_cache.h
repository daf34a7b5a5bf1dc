// File: candle_prealloc_cache.h
// CandlePreallocCache: a model of candle 0.11's KvCache (a pair of `Cache`s: lazy buffer,
// slice_set at the current length, growth by `grow_by` = the initial capacity) with one of its
// documented defects switched on. Each defect of the catalogue that lives in this cache is a
// value of PreallocDefect; registry.cc turns each into a registered strategy.
//
// The K and V halves keep their own lengths, as candle's two Caches do: an append writes K,
// then V, and an error in between leaves them out of step (kHalvesOutOfStep).
#ifndef KVCHECK_DEFECTS_CANDLE_PREALLOC_CACHE_H_
#define KVCHECK_DEFECTS_CANDLE_PREALLOC_CACHE_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "src/cache/cache_config.h"
#include "src/cache/kv_cache.h"

namespace kvcheck::defects {

enum class PreallocDefect {
  kCloneSharesBuffer,           // Fork copies the handles: both write one buffer
  kRejectsNonContiguousPrefill, // slice_set requires contiguous input (S = 1 passes)
  kGrowsOnlyOnce,               // `if` instead of `while` (before candle PR #3035)
  kZeroCapacityNeverTerminates, // grow_by = 0: the growth loop spins (cut by a step budget)
  kLinearGrowth,                // grows by grow_by = initial capacity: quadratic copying
  kResetKeepsStaleRows,         // Reset rewinds the length, views keep the old high-water mark
  kHalvesOutOfStep,             // K appended, then V fails (non-contiguous V): K advanced
};

// Iterations after which kZeroCapacityNeverTerminates reports a hang instead of spinning on.
inline constexpr int64_t kGrowthStepBudget = int64_t{1} << 20;

class CandlePreallocCache : public KvCache {
 public:
  static absl::StatusOr<std::unique_ptr<KvCache>> Create(PreallocDefect defect,
                                                         const CacheConfig& config);

  const char* name() const override { return name_; }
  std::unique_ptr<KvCache> Fork() const override;
  int64_t capacity() const override { return capacity_; }

 private:
  CandlePreallocCache(PreallocDefect defect, int64_t initial_capacity, const char* name)
      : defect_(defect), initial_capacity_(initial_capacity), name_(name) {}
  CandlePreallocCache(const CandlePreallocCache&) = default;

  absl::Status DoAppend(const Tensor& k, const Tensor& v, absl::Span<const bool> active) override;
  absl::StatusOr<CacheView> DoView() const override;
  void DoReset() override;

  // candle's Cache::append for one half: grow, then slice_set at `length`.
  absl::Status AppendHalf(Tensor& buffer, int64_t length, const Tensor& src);

  PreallocDefect defect_;
  int64_t initial_capacity_;  // candle's grow_by
  const char* name_;
  int64_t capacity_ = 0;
  int64_t k_length_ = 0;
  int64_t v_length_ = 0;
  int64_t high_water_ = 0;    // kResetKeepsStaleRows: the view length survives Reset
  Tensor k_buffer_;
  Tensor v_buffer_;
};

}  // namespace kvcheck::defects

#endif  // KVCHECK_DEFECTS_CANDLE_PREALLOC_CACHE_H_
