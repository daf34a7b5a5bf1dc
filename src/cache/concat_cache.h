// File: concat_cache.h
// ConcatCache ("concat"): keeps K and V as exactly-sized contiguous tensors and joins each
// append onto them with a cat, as quantized_llama and candle's ConcatKvCache do.
//
// - Every append copies the whole history (O(n) bytes per token, O(n^2) per sequence): the
//   growth law does not apply, the cost is the point of comparison (bench/). With
//   CacheConfig::num_threads > 1 a large history is copied a head per task on that many
//   threads.
// - Returned K/V are always contiguous and never alias the input or later appends, so Fork
//   only copies the handles (cheap and safe: no storage is ever written after creation).
#ifndef KVCHECK_SRC_CACHE_CONCAT_CACHE_H_
#define KVCHECK_SRC_CACHE_CONCAT_CACHE_H_

#include <memory>

#include "absl/status/statusor.h"
#include "src/cache/cache_config.h"
#include "src/cache/kv_cache.h"

namespace kvcheck {

class ConcatCache : public KvCache {
 public:
  static absl::StatusOr<std::unique_ptr<KvCache>> Create(const CacheConfig& config);

  const char* name() const override { return "concat"; }
  std::unique_ptr<KvCache> Fork() const override;
  int64_t capacity() const override { return seq_len(); }

 private:
  ConcatCache(int64_t budget, int num_threads) : budget_(budget), num_threads_(num_threads) {}
  ConcatCache(const ConcatCache&) = default;

  absl::Status DoAppend(const Tensor& k, const Tensor& v, absl::Span<const bool> active) override;
  absl::StatusOr<CacheView> DoView() const override;
  void DoReset() override;

  int64_t budget_;  // storage budget in bytes (CacheConfig::max_bytes)
  int num_threads_;  // CacheConfig::num_threads
  Tensor k_;
  Tensor v_;
};

}  // namespace kvcheck

#endif  // KVCHECK_SRC_CACHE_CONCAT_CACHE_H_
