// File: raw_interleaved_cache.h
// RawInterleavedCache: a model of candle's RawInterleavedKvCache (a flat position-major
// buffer [pos][kv_head][K(D) | V(D)] written one position at a time) with its zero-capacity
// defect: when a position does not fit, the buffer doubles, and doubling 0 gives 0, so the
// write goes past the end of the allocation. In C++ that is an out-of-bounds heap write: the
// kill test runs it under AddressSanitizer (a death test), and so do the fuzzers.
#ifndef KVCHECK_DEFECTS_RAW_INTERLEAVED_CACHE_H_
#define KVCHECK_DEFECTS_RAW_INTERLEAVED_CACHE_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "src/cache/cache_config.h"
#include "src/cache/kv_cache.h"

namespace kvcheck::defects {

class RawInterleavedCache : public KvCache {
 public:
  static absl::StatusOr<std::unique_ptr<KvCache>> Create(const CacheConfig& config);

  const char* name() const override { return "interleaved_zero_capacity_oob"; }
  std::unique_ptr<KvCache> Fork() const override;
  int64_t capacity() const override { return buffer_.rank() == 4 ? capacity_ : 0; }

 private:
  explicit RawInterleavedCache(int64_t initial_capacity) : capacity_(initial_capacity) {}
  RawInterleavedCache(const RawInterleavedCache& other);

  absl::Status DoAppend(const Tensor& k, const Tensor& v, absl::Span<const bool> active) override;
  absl::StatusOr<CacheView> DoView() const override;
  void DoReset() override;

  int64_t capacity_;   // positions the buffer holds (candle: max_seq, doubled when full)
  Tensor buffer_;      // (B, capacity, KH, 2D)
};

}  // namespace kvcheck::defects

#endif  // KVCHECK_DEFECTS_RAW_INTERLEAVED_CACHE_H_
