// File: candle_ring_cache.h
// CandleRingCache: a model of candle's RotatingCache (a ring of W slots with a write offset)
// with one of its two documented defects:
//   kPositionsRotatedForFullChunk: an append of S >= W copies the chunk's last W tokens into
//     slots 0..W-1 in time order and resets the offset, but the positions reported for the
//     slots come from the rotated formula of positions(n), which assumes the old offset: wrong
//     whenever the offset was not 0 (for example M=6, current=13, offset=1);
//   kChunkReturnsChunkOnly: an append of S >= W returns the chunk itself (S tokens, its mask
//     letting a query see W + 1 keys), not the W visible ones.
#ifndef KVCHECK_DEFECTS_CANDLE_RING_CACHE_H_
#define KVCHECK_DEFECTS_CANDLE_RING_CACHE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "src/cache/cache_config.h"
#include "src/cache/kv_cache.h"

namespace kvcheck::defects {

enum class RingDefect { kPositionsRotatedForFullChunk, kChunkReturnsChunkOnly };

class CandleRingCache : public KvCache {
 public:
  static absl::StatusOr<std::unique_ptr<KvCache>> Create(RingDefect defect,
                                                         const CacheConfig& config);

  const char* name() const override;
  std::unique_ptr<KvCache> Fork() const override;
  int64_t capacity() const override { return k_buffer_.rank() == 4 ? window_ : 0; }

 private:
  CandleRingCache(RingDefect defect, int64_t window) : defect_(defect), window_(window) {}
  CandleRingCache(const CandleRingCache& other);

  absl::Status DoAppend(const Tensor& k, const Tensor& v, absl::Span<const bool> active) override;
  absl::StatusOr<CacheView> DoView() const override;
  void DoReset() override;

  RingDefect defect_;
  int64_t window_;
  int64_t offset_ = 0;             // next slot to write (candle's `offset`)
  Tensor k_buffer_, v_buffer_;     // (B, KH, W, D)
  // What the last append returned when it differs from the buffer (kChunkReturnsChunkOnly).
  Tensor k_chunk_, v_chunk_;
  std::vector<int64_t> reported_positions_;  // positions of the last view, per slot (B = 1 row)
};

}  // namespace kvcheck::defects

#endif  // KVCHECK_DEFECTS_CANDLE_RING_CACHE_H_
