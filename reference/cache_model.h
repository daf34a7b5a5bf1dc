// File: cache_model.h
// CacheModel: the exact history model of the cache contract (src/cache/kv_cache.h) that every
// cache strategy is compared with, bit for bit.
//
// It keeps, per batch row, every token appended since the last reset (its K and V rows as raw
// element bits, KH * D each) and derives the visible set from the contract alone:
//   - token positions count from 0 since the last reset, per batch row;
//   - a full cache shows [0, n); a window-W cache shows [max(0, n - W), n);
//   - an append of S tokens adds them in order (inactive rows of a scattered append add none);
//   - B, KH, D and dtype are fixed by the first append after construction or reset;
//   - Fork is a copy (value semantics), Reset forgets everything.
// It has no notion of capacity, slots or layout: those are the strategies' business.
#ifndef KVCHECK_REFERENCE_CACHE_MODEL_H_
#define KVCHECK_REFERENCE_CACHE_MODEL_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/types/span.h"
#include "src/tensor/dtype.h"

namespace kvcheck::reference {

// The shape fixed by the first append.
struct CacheShape {
  int64_t batch = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  DType dtype = DType::kF32;
  bool operator==(const CacheShape&) const = default;
};

// One visible token of one batch row.
struct ModelToken {
  int64_t position = 0;
  std::vector<uint32_t> k;  // (KH, D) row-major element bits
  std::vector<uint32_t> v;
};

class CacheModel {
 public:
  // window == 0: unbounded (every token since reset is visible).
  explicit CacheModel(int64_t window = 0) : window_(window) {}

  int64_t window() const { return window_; }
  const std::optional<CacheShape>& shape() const { return shape_; }

  // Appends `seq_len` tokens to every active batch row. k_bits and v_bits are (B, KH, S, D)
  // row-major element bits; `active` is empty (all rows) or one flag per batch row.
  // REQUIRES: shape matches shape() if set (checked); sizes consistent (checked).
  void Append(const CacheShape& shape, int64_t seq_len, absl::Span<const uint32_t> k_bits,
              absl::Span<const uint32_t> v_bits, absl::Span<const bool> active = {});

  void Reset();

  // Tokens appended to batch row b since the last reset (its next position).
  int64_t appended(int64_t b) const;
  // Visible tokens of batch row b, in position order.
  std::vector<ModelToken> Visible(int64_t b) const;
  // The same without copying (valid until the next Append or Reset).
  absl::Span<const ModelToken> VisibleSpan(int64_t b) const;
  // Number of visible tokens of row b: min(appended, W) (or appended).
  int64_t visible_count(int64_t b) const;

 private:
  int64_t window_;
  std::optional<CacheShape> shape_;
  std::vector<std::vector<ModelToken>> rows_;  // per batch row, all tokens since reset
};

}  // namespace kvcheck::reference

#endif  // KVCHECK_REFERENCE_CACHE_MODEL_H_
