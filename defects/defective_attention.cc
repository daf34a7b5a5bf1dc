#include "defects/defective_attention.h"

#include <cmath>
#include <limits>
#include <vector>

#include "src/attention/key_rules.h"
#include "src/base/status_macros.h"
#include "src/tensor/copy_ops.h"

namespace kvcheck::defects {
namespace {

// x rounded to 20 significant bits (f32 keeps 24): an accumulator 16x less accurate.
float Coarse(float x) {
  if (!std::isfinite(x) || x == 0.0f) return x;
  int exponent;
  const float mantissa = std::frexp(x, &exponent);  // in [0.5, 1)
  return std::ldexp(std::nearbyint(std::ldexp(mantissa, 20)), exponent - 20);
}

}  // namespace

absl::StatusOr<Tensor> DefectiveAttention(AttentionDefect defect, const Tensor& q,
                                          const Tensor& k, const Tensor& v,
                                          const AttentionParams& params) {
  KV_ASSIGN_OR_RETURN(const AttentionShape s, ValidateAttention(q, k, v, params));
  KV_ASSIGN_OR_RETURN(Tensor qf, Cast(q, DType::kF32));
  KV_ASSIGN_OR_RETURN(Tensor kf, Cast(k, DType::kF32));
  KV_ASSIGN_OR_RETURN(Tensor vf, Cast(v, DType::kF32));
  Tensor mask;
  if (params.mask.has_value()) {
    KV_ASSIGN_OR_RETURN(mask, Cast(*params.mask, DType::kF32));
  }
  KV_ASSIGN_OR_RETURN(Tensor out, Tensor::Zeros(DType::kF32, {s.batch, s.num_heads, s.q_len, s.head_dim}));
  const int64_t D = s.head_dim;
  const float scale = params.scale.value_or(attention_internal::DefaultScale(D));
  const float inverse_softcap = params.softcap > 0 ? 1.0f / params.softcap : 0.0f;
  std::vector<float> acc(D);
  for (int64_t b = 0; b < s.batch; ++b) {
    const attention_internal::RowPositions positions(params, s, b);
    for (int64_t h = 0; h < s.num_heads; ++h) {
      const int64_t kv_head =
          defect == AttentionDefect::kGqaModulo ? h % s.num_kv_heads : h / s.group_size();
      const float slope = params.alibi_slopes.empty() ? 0.0f : params.alibi_slopes[h];
      for (int64_t i = 0; i < s.q_len; ++i) {
        int64_t qpos = positions.query(i);
        if (defect == AttentionDefect::kCausalTopLeft && params.q_positions.empty()) qpos = i;
        const float* qr = qf.data<float>() + ((b * s.num_heads + h) * s.q_len + i) * D;
        float m = -std::numeric_limits<float>::infinity(), l = 0.0f;
        bool any = false, nan = false;
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int64_t j = 0; j < s.kv_len; ++j) {
          const int64_t kpos = positions.key(j);
          if (!attention_internal::KeyAllowed(qpos, kpos, params.causal, params.window)) continue;
          const float mask_value =
              params.mask.has_value()
                  ? mask.data<float>()[(((mask.dim(0) == 1 ? 0 : b) * mask.dim(1) +
                                         (mask.dim(1) == 1 ? 0 : h)) * s.q_len + i) * s.kv_len + j]
                  : 0.0f;
          if (attention_internal::IsMinusInfinity(mask_value)) continue;
          any = true;
          const float* kr = kf.data<float>() + ((b * s.num_kv_heads + kv_head) * s.kv_len + j) * D;
          const float* vr = vf.data<float>() + ((b * s.num_kv_heads + kv_head) * s.kv_len + j) * D;
          float dot = 0.0f;
          for (int64_t d = 0; d < D; ++d) dot += qr[d] * kr[d];
          if (defect == AttentionDefect::kHalfPrecisionDot) dot = RoundToDType(dot, q.dtype());
          float score = attention_internal::FinishScore(dot * scale, params.softcap,
                                                        inverse_softcap, slope, qpos, kpos,
                                                        mask_value);
          if (defect == AttentionDefect::kSoftcapDecodeBias && params.softcap > 0 &&
              s.q_len == 1 && params.alibi_slopes.empty()) {
            score += static_cast<float>(kpos - qpos);  // slope 1 although ALiBi is off
          }
          nan = nan || std::isnan(score) || score == std::numeric_limits<float>::infinity();
          if (score > m) {
            const float alpha = std::exp(m - score);
            if (defect != AttentionDefect::kNoRescaleOnNewMax) {
              for (int64_t d = 0; d < D; ++d) acc[d] *= alpha;
            }
            l = l * alpha + 1.0f;
            m = score;
            for (int64_t d = 0; d < D; ++d) acc[d] += vr[d];
          } else {
            const float w = std::isinf(score) ? 0.0f : std::exp(score - m);
            l += w;
            for (int64_t d = 0; d < D; ++d) acc[d] += w * vr[d];
          }
          if (defect == AttentionDefect::kCoarseAccumulator) {
            l = Coarse(l);
            for (int64_t d = 0; d < D; ++d) acc[d] = Coarse(acc[d]);
          }
        }
        float* o = out.data<float>() + ((b * s.num_heads + h) * s.q_len + i) * D;
        if (!any && defect != AttentionDefect::kMaskedRowNaN) continue;  // 0
        for (int64_t d = 0; d < D; ++d) {
          o[d] = nan ? std::numeric_limits<float>::quiet_NaN() : acc[d] / l;  // 0/0 = NaN: no key
        }
      }
    }
  }
  if (q.dtype() == DType::kF32) return out;
  return Cast(out, q.dtype());
}

}  // namespace kvcheck::defects
