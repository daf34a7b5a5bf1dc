#include "properties/straightforward_attention.h"

#include <cmath>
#include <limits>

namespace kvcheck::properties {

std::vector<float> StraightforwardAttention(const reference::AttentionProblem& p) {
  std::vector<float> out(p.q.size(), 0.0f);
  const float scale = p.scale.has_value()
                          ? *p.scale
                          : 1.0f / std::sqrt(static_cast<float>(p.head_dim));
  const int64_t group = p.num_heads / p.num_kv_heads;
  std::vector<float> scores;
  std::vector<int64_t> keys;
  std::vector<bool> wanted;  // the checked rows (all when the problem names none)
  if (!p.checked_rows.empty()) {
    wanted.assign(p.batch * p.num_heads * p.q_len, false);
    for (int64_t row : p.checked_rows) wanted[row] = true;
  }
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t h = 0; h < p.num_heads; ++h) {
      const int64_t kv_head = h / group;
      for (int64_t i = 0; i < p.q_len; ++i) {
        if (!wanted.empty() && !wanted[(b * p.num_heads + h) * p.q_len + i]) continue;
        scores.clear();
        keys.clear();
        const int64_t qpos = p.QPosition(b, i);
        for (int64_t j = 0; j < p.kv_len && qpos >= 0; ++j) {
          const int64_t kpos = p.KvPosition(b, j);
          if (kpos < 0 || (p.causal && kpos > qpos)) continue;
          if (p.window > 0 && qpos - kpos >= p.window) continue;
          float mask = 0.0f;
          if (!p.mask.empty()) {
            mask = p.mask[p.MaskIndex(b, h, i, j)];
            if (mask == -std::numeric_limits<float>::infinity()) continue;
          }
          float dot = 0.0f;
          for (int64_t d = 0; d < p.head_dim; ++d) {
            dot += p.q[p.QIndex(b, h, i, d)] * p.k[p.KvIndex(b, kv_head, j, d)];
          }
          float s = dot * scale;
          if (p.softcap > 0) s = p.softcap * std::tanh(s / p.softcap);
          if (!p.alibi_slopes.empty()) s += p.alibi_slopes[h] * static_cast<float>(kpos - qpos);
          s += mask;
          scores.push_back(s);
          keys.push_back(j);
        }
        const int64_t base = p.QIndex(b, h, i, 0);
        if (keys.empty()) continue;  // no allowed key: 0
        float max = -std::numeric_limits<float>::infinity();
        bool nan = false;
        for (float s : scores) {
          nan = nan || std::isnan(s);
          max = std::fmax(max, s);
        }
        float sum = 0.0f;
        for (float& s : scores) {
          s = nan ? NAN : std::exp(s - max);  // exp(-inf - -inf) = NaN keeps all -inf rows NaN
          sum += s;
        }
        for (int64_t d = 0; d < p.head_dim; ++d) {
          float acc = 0.0f;
          for (size_t n = 0; n < keys.size(); ++n) {
            acc += scores[n] * p.v[p.KvIndex(b, kv_head, keys[n], d)];
          }
          out[base + d] = RoundToDType(acc / sum, p.output_dtype);
        }
      }
    }
  }
  return out;
}

}  // namespace kvcheck::properties
