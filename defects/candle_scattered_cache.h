// File: candle_scattered_cache.h
// CandleScatteredCache: a model of candle's ScatteredKvCache (a ring of C slots per batch row,
// rows advancing independently) with its long-prompt defect: when a chunk has S >= C tokens
// the builder advances the row's positions and write index, but the cache is not written
// (candle's "abs" path returns the chunk instead), so the next decode attends to slots that
// hold zeros or stale tokens while the positions claim otherwise.
#ifndef KVCHECK_DEFECTS_CANDLE_SCATTERED_CACHE_H_
#define KVCHECK_DEFECTS_CANDLE_SCATTERED_CACHE_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "src/cache/cache_config.h"
#include "src/cache/kv_cache.h"

namespace kvcheck::defects {

class CandleScatteredCache : public KvCache {
 public:
  static absl::StatusOr<std::unique_ptr<KvCache>> Create(const CacheConfig& config);

  const char* name() const override { return "scattered_long_prompt_skips_write"; }
  std::unique_ptr<KvCache> Fork() const override;
  int64_t capacity() const override { return k_buffer_.rank() == 4 ? context_ : 0; }
  bool supports_inactive_rows() const override { return true; }

 private:
  explicit CandleScatteredCache(int64_t context) : context_(context) {}
  CandleScatteredCache(const CandleScatteredCache&) = default;

  absl::Status DoAppend(const Tensor& k, const Tensor& v, absl::Span<const bool> active) override;
  absl::StatusOr<CacheView> DoView() const override;
  void DoReset() override;

  int64_t context_;
  Tensor k_buffer_, v_buffer_;  // (B, KH, C, D)
};

}  // namespace kvcheck::defects

#endif  // KVCHECK_DEFECTS_CANDLE_SCATTERED_CACHE_H_
