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

// The online-softmax state of one query row over a range of keys.
struct PartialState {
  float m = 0.0f;   // running max
  float l = 0.0f;   // running sum of exp(s - m)
  float lse = 0.0f; // m + log l (the split defect's merge)
  std::vector<float> acc;
  bool any = false;  // an allowed key was seen
  bool nan = false;  // a NaN or +inf score
};

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
  const float initial_max = defect == AttentionDefect::kFiniteInitialMax
                                ? -1e9f
                                : -std::numeric_limits<float>::infinity();
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
        // The online softmax over keys [lo, hi): max m, sum l, accumulator acc.
        auto accumulate = [&](int64_t lo, int64_t hi, PartialState& state) {
          state.m = initial_max;
          state.acc.assign(D, 0.0f);
          for (int64_t j = lo; j < hi; ++j) {
            const int64_t kpos = positions.key(j);
            if (!attention_internal::KeyAllowed(qpos, kpos, params.causal, params.window)) continue;
            const float mask_value =
                params.mask.has_value()
                    ? mask.data<float>()[(((mask.dim(0) == 1 ? 0 : b) * mask.dim(1) +
                                           (mask.dim(1) == 1 ? 0 : h)) * s.q_len + i) * s.kv_len + j]
                    : 0.0f;
            if (attention_internal::IsMinusInfinity(mask_value)) continue;
            state.any = true;
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
            state.nan = state.nan || std::isnan(score) ||
                        score == std::numeric_limits<float>::infinity();
            if (score > state.m) {
              const float alpha = std::exp(state.m - score);
              if (defect != AttentionDefect::kNoRescaleOnNewMax) {
                for (int64_t d = 0; d < D; ++d) state.acc[d] *= alpha;
              }
              state.l = state.l * alpha + 1.0f;
              state.m = score;
              for (int64_t d = 0; d < D; ++d) state.acc[d] += vr[d];
            } else {
              const float w = std::isinf(score) ? 0.0f : std::exp(score - state.m);
              state.l += w;
              for (int64_t d = 0; d < D; ++d) state.acc[d] += w * vr[d];
            }
            if (defect == AttentionDefect::kCoarseAccumulator) {
              state.l = Coarse(state.l);
              for (int64_t d = 0; d < D; ++d) state.acc[d] = Coarse(state.acc[d]);
            }
          }
        };
        float* o = out.data<float>() + ((b * s.num_heads + h) * s.q_len + i) * D;
        if (defect == AttentionDefect::kEmptySplitPoisonsMerge) {
          // Flash-decoding: three key ranges, each normalised on its own with its log-sum-exp,
          // merged as O = sum_i exp(lse_i - lse) O_i. The defect: a range with no allowed key
          // keeps O_i = 0 / 0 = NaN, and its merge weight exp(-inf - lse) = 0 does not cancel
          // it (0 * NaN = NaN).
          PartialState parts[3];
          bool any = false, nan = false;
          float lse_max = -std::numeric_limits<float>::infinity();
          for (int part = 0; part < 3; ++part) {
            accumulate(s.kv_len * part / 3, s.kv_len * (part + 1) / 3, parts[part]);
            any = any || parts[part].any;
            nan = nan || parts[part].nan;
            parts[part].lse = parts[part].m + std::log(parts[part].l);
            lse_max = std::max(lse_max, parts[part].lse);
          }
          if (!any) continue;  // 0
          float total = 0.0f;
          for (const PartialState& part : parts) total += std::exp(part.lse - lse_max);
          for (int64_t d = 0; d < D; ++d) {
            float merged = 0.0f;
            for (const PartialState& part : parts) {
              merged += std::exp(part.lse - lse_max) / total * (part.acc[d] / part.l);
            }
            o[d] = nan ? std::numeric_limits<float>::quiet_NaN() : merged;
          }
          continue;
        }
        PartialState state;
        accumulate(0, s.kv_len, state);
        if (!state.any && defect != AttentionDefect::kMaskedRowNaN) continue;  // 0
        for (int64_t d = 0; d < D; ++d) {
          // 0 / 0 = NaN for a row with no key (kMaskedRowNaN), or where every weight
          // underflowed against a finite initial max (kFiniteInitialMax).
          o[d] = state.nan ? std::numeric_limits<float>::quiet_NaN() : state.acc[d] / state.l;
        }
      }
    }
  }
  if (q.dtype() == DType::kF32) return out;
  return Cast(out, q.dtype());
}

}  // namespace kvcheck::defects
