#include "src/attention/naive_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "src/attention/key_rules.h"
#include "src/base/status_macros.h"
#include "src/tensor/copy_ops.h"

namespace kvcheck {
namespace {

using attention_internal::DefaultScale;
using attention_internal::FinishScore;
using attention_internal::IsMinusInfinity;
using attention_internal::KeyAllowed;
using attention_internal::RowPositions;

// (B, KH, S, D) -> (B, H, S, D) by copying each KV head H / KH times, as repeat_kv does.
absl::StatusOr<Tensor> RepeatKv(const Tensor& kv, int64_t group) {
  if (group == 1) return kv;
  KV_ASSIGN_OR_RETURN(Tensor out, Tensor::Zeros(DType::kF32, {kv.dim(0), kv.dim(1) * group,
                                                              kv.dim(2), kv.dim(3)}));
  const int64_t head_size = kv.dim(2) * kv.dim(3);
  const float* src = kv.data<float>();
  float* dst = out.data<float>();
  for (int64_t bh = 0; bh < kv.dim(0) * kv.dim(1); ++bh) {
    for (int64_t g = 0; g < group; ++g) {
      std::copy_n(src + bh * head_size, head_size, dst + (bh * group + g) * head_size);
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<Tensor> NaiveAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                                      const AttentionParams& params) {
  KV_ASSIGN_OR_RETURN(const AttentionShape shape, ValidateAttention(q, k, v, params));
  const int64_t B = shape.batch, H = shape.num_heads, Sq = shape.q_len, Skv = shape.kv_len,
                D = shape.head_dim;
  KV_ASSIGN_OR_RETURN(Tensor qf, Cast(q, DType::kF32));
  KV_ASSIGN_OR_RETURN(Tensor kf, Cast(k, DType::kF32));
  KV_ASSIGN_OR_RETURN(Tensor vf, Cast(v, DType::kF32));
  KV_ASSIGN_OR_RETURN(kf, RepeatKv(kf, shape.group_size()));
  KV_ASSIGN_OR_RETURN(vf, RepeatKv(vf, shape.group_size()));
  Tensor mask;
  if (params.mask.has_value()) {
    KV_ASSIGN_OR_RETURN(mask, Cast(*params.mask, DType::kF32));
  }
  KV_ASSIGN_OR_RETURN(Tensor out, Tensor::Zeros(DType::kF32, {B, H, Sq, D}));

  const float scale = params.scale.value_or(DefaultScale(D));
  const float inverse_softcap = params.softcap > 0 ? 1.0f / params.softcap : 0.0f;
  std::vector<float> scores(Sq * Skv);
  std::vector<char> allowed(Sq * Skv);
  for (int64_t b = 0; b < B; ++b) {
    const RowPositions positions(params, shape, b);
    for (int64_t h = 0; h < H; ++h) {
      const float* qh = qf.data<float>() + (b * H + h) * Sq * D;
      const float* kh = kf.data<float>() + (b * H + h) * Skv * D;
      const float* vh = vf.data<float>() + (b * H + h) * Skv * D;
      float* oh = out.data<float>() + (b * H + h) * Sq * D;
      const float* mask_h =
          params.mask.has_value()
              ? mask.data<float>() +
                    ((mask.dim(0) == 1 ? 0 : b) * mask.dim(1) + (mask.dim(1) == 1 ? 0 : h)) *
                        Sq * Skv
              : nullptr;
      const float slope = params.alibi_slopes.empty() ? 0.0f : params.alibi_slopes[h];
      // scores = q k^T * scale, then softcap, ALiBi and masks.
      for (int64_t i = 0; i < Sq; ++i) {
        const int64_t qpos = positions.query(i);
        for (int64_t j = 0; j < Skv; ++j) {
          const int64_t kpos = positions.key(j);
          const float mask_value = mask_h != nullptr ? mask_h[i * Skv + j] : 0.0f;
          const bool ok = KeyAllowed(qpos, kpos, params.causal, params.window) &&
                          !IsMinusInfinity(mask_value);
          allowed[i * Skv + j] = ok;
          if (!ok) continue;
          float dot = 0.0f;
          for (int64_t d = 0; d < D; ++d) dot += qh[i * D + d] * kh[j * D + d];
          scores[i * Skv + j] = FinishScore(dot * scale, params.softcap, inverse_softcap, slope,
                                            qpos, kpos, mask_value);
        }
      }
      // Softmax per row over the allowed keys, then out = P v over the allowed keys only.
      for (int64_t i = 0; i < Sq; ++i) {
        float* row = scores.data() + i * Skv;
        const char* ok = allowed.data() + i * Skv;
        float max = -std::numeric_limits<float>::infinity();
        bool any = false, nan = false;
        for (int64_t j = 0; j < Skv; ++j) {
          if (!ok[j]) continue;
          any = true;
          nan = nan || std::isnan(row[j]);
          max = std::fmax(max, row[j]);
        }
        if (!any) continue;  // no allowed key: the output row stays 0
        float sum = 0.0f;
        for (int64_t j = 0; j < Skv; ++j) {
          if (!ok[j]) continue;
          // A NaN score poisons the row; exp(-inf - -inf) = NaN keeps all -inf rows NaN too.
          row[j] = nan ? std::numeric_limits<float>::quiet_NaN() : std::exp(row[j] - max);
          sum += row[j];
        }
        const float inverse_sum = 1.0f / sum;
        for (int64_t j = 0; j < Skv; ++j) {
          if (!ok[j]) continue;
          const float p = row[j] * inverse_sum;
          for (int64_t d = 0; d < D; ++d) oh[i * D + d] += p * vh[j * D + d];
        }
      }
    }
  }
  if (q.dtype() == DType::kF32) return out;
  return Cast(out, q.dtype());
}

}  // namespace kvcheck
