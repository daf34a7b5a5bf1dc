#include "reference/cache_model.h"

#include <algorithm>

#include "src/base/check.h"

namespace kvcheck::reference {

void CacheModel::Append(const CacheShape& shape, int64_t seq_len,
                        absl::Span<const uint32_t> k_bits, absl::Span<const uint32_t> v_bits,
                        absl::Span<const bool> active) {
  if (shape_.has_value()) {
    KV_CHECK(*shape_ == shape);
  } else {
    shape_ = shape;
    rows_.assign(shape.batch, {});
  }
  const int64_t row_size = shape.num_kv_heads * shape.head_dim;
  KV_CHECK(static_cast<int64_t>(k_bits.size()) == shape.batch * row_size * seq_len);
  KV_CHECK(k_bits.size() == v_bits.size());
  KV_CHECK(active.empty() || static_cast<int64_t>(active.size()) == shape.batch);
  for (int64_t b = 0; b < shape.batch; ++b) {
    if (!active.empty() && !active[b]) continue;
    for (int64_t s = 0; s < seq_len; ++s) {
      ModelToken token;
      token.position = static_cast<int64_t>(rows_[b].size());
      token.k.resize(row_size);
      token.v.resize(row_size);
      for (int64_t h = 0; h < shape.num_kv_heads; ++h) {
        // Source index of (b, h, s, 0) in the (B, KH, S, D) input.
        const int64_t from = ((b * shape.num_kv_heads + h) * seq_len + s) * shape.head_dim;
        std::copy_n(k_bits.begin() + from, shape.head_dim, token.k.begin() + h * shape.head_dim);
        std::copy_n(v_bits.begin() + from, shape.head_dim, token.v.begin() + h * shape.head_dim);
      }
      rows_[b].push_back(std::move(token));
    }
  }
}

void CacheModel::Reset() {
  shape_.reset();
  rows_.clear();
}

int64_t CacheModel::appended(int64_t b) const {
  if (!shape_.has_value()) return 0;
  KV_CHECK(b >= 0 && b < static_cast<int64_t>(rows_.size()));
  return static_cast<int64_t>(rows_[b].size());
}

int64_t CacheModel::visible_count(int64_t b) const {
  const int64_t n = appended(b);
  return window_ > 0 ? std::min(n, window_) : n;
}

std::vector<ModelToken> CacheModel::Visible(int64_t b) const {
  const absl::Span<const ModelToken> visible = VisibleSpan(b);
  return std::vector<ModelToken>(visible.begin(), visible.end());
}

absl::Span<const ModelToken> CacheModel::VisibleSpan(int64_t b) const {
  if (!shape_.has_value()) return {};
  const int64_t first = appended(b) - visible_count(b);
  return absl::Span<const ModelToken>(rows_[b]).subspan(first);
}

}  // namespace kvcheck::reference
