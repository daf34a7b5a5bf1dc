#include "src/attention/naive_attention.h"

#include <cblas.h>

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

bool AllFinite(const float* values, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    if (!std::isfinite(values[i])) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<Tensor> NaiveAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                                      const AttentionParams& params,
                                      const NaiveOptions& options) {
  KV_ASSIGN_OR_RETURN(const AttentionShape shape, ValidateAttention(q, k, v, params));
  const int64_t B = shape.batch, H = shape.num_heads, Sq = shape.q_len, Skv = shape.kv_len,
                D = shape.head_dim;
  // (Its score matrices would be Sq x Skv, and those may be huge.)
  if (shape.no_output_rows()) return Tensor::Zeros(q.dtype(), {B, H, Sq, D});
  KV_ASSIGN_OR_RETURN(Tensor qf, Cast(q, DType::kF32));
  KV_ASSIGN_OR_RETURN(Tensor kf, Cast(k, DType::kF32));
  KV_ASSIGN_OR_RETURN(Tensor vf, Cast(v, DType::kF32));
  // Heads that share K and V in one matrix product: the whole group, or one head after
  // repeat_kv made a copy per query head.
  int64_t kv_heads = shape.num_kv_heads, group = shape.group_size();
  if (options.repeat_kv) {
    KV_ASSIGN_OR_RETURN(kf, RepeatKv(kf, group));
    KV_ASSIGN_OR_RETURN(vf, RepeatKv(vf, group));
    kv_heads = H;
    group = 1;
  }
  Tensor mask;
  if (params.mask.has_value()) {
    KV_ASSIGN_OR_RETURN(mask, Cast(*params.mask, DType::kF32));
  }
  KV_ASSIGN_OR_RETURN(Tensor out, Tensor::Zeros(DType::kF32, {B, H, Sq, D}));

  const float scale = params.scale.value_or(DefaultScale(D));
  const float inverse_softcap = params.softcap > 0 ? 1.0f / params.softcap : 0.0f;
  const int64_t rows = group * Sq;  // query rows of one product: heads of the group x queries
  std::vector<float> scores(rows * Skv);
  std::vector<char> allowed(rows * Skv);
  std::vector<float> out_rows(rows * D);
  for (int64_t b = 0; b < B; ++b) {
    const RowPositions positions(params, shape, b);
    for (int64_t kh = 0; kh < kv_heads; ++kh) {
      const float* kh_data = kf.data<float>() + (b * kv_heads + kh) * Skv * D;
      const float* vh_data = vf.data<float>() + (b * kv_heads + kh) * Skv * D;
      // The group's query heads are consecutive in q: (group * Sq, D) rows, contiguous.
      const float* q_rows = qf.data<float>() + (b * H + kh * group) * Sq * D;
      // scores = q k^T * scale: (rows, D) x (D, Skv).
      if (rows > 0 && Skv > 0) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, Skv, D, scale, q_rows, D,
                    kh_data, D, 0.0f, scores.data(), Skv);
      }
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t h = kh * group + r / Sq, i = r % Sq;
        const int64_t qpos = positions.query(i);
        const float slope = params.alibi_slopes.empty() ? 0.0f : params.alibi_slopes[h];
        const float* mask_row =
            params.mask.has_value()
                ? mask.data<float>() +
                      (((mask.dim(0) == 1 ? 0 : b) * mask.dim(1) + (mask.dim(1) == 1 ? 0 : h)) *
                           Sq + i) * Skv
                : nullptr;
        float* row = scores.data() + r * Skv;
        char* ok = allowed.data() + r * Skv;
        float max = -std::numeric_limits<float>::infinity();
        bool any = false, nan = false;
        for (int64_t j = 0; j < Skv; ++j) {
          const int64_t kpos = positions.key(j);
          const float mask_value = mask_row != nullptr ? mask_row[j] : 0.0f;
          ok[j] = KeyAllowed(qpos, kpos, params.causal, params.window) &&
                  !IsMinusInfinity(mask_value);
          if (!ok[j]) {
            row[j] = 0.0f;  // weight 0 in the product below
            continue;
          }
          row[j] = FinishScore(row[j], params.softcap, inverse_softcap, slope, qpos, kpos,
                               mask_value);
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
        for (int64_t j = 0; j < Skv; ++j) row[j] *= inverse_sum;
      }
      // out = P v: (rows, Skv) x (Skv, D). Disallowed keys have P = 0, which is only safe when
      // every V value is finite (0 * NaN = NaN); otherwise go key by key over allowed keys.
      std::fill(out_rows.begin(), out_rows.end(), 0.0f);
      if (rows > 0 && Skv > 0 && AllFinite(vh_data, Skv * D)) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, D, Skv, 1.0f, scores.data(),
                    Skv, vh_data, D, 0.0f, out_rows.data(), D);
      } else {
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t j = 0; j < Skv; ++j) {
            if (!allowed[r * Skv + j]) continue;
            const float p = scores[r * Skv + j];
            for (int64_t d = 0; d < D; ++d) out_rows[r * D + d] += p * vh_data[j * D + d];
          }
        }
      }
      // Rows with no allowed key stay 0 (sgemm of a zero row); scatter into the output.
      float* out_group = out.data<float>() + (b * H + kh * group) * Sq * D;
      std::copy(out_rows.begin(), out_rows.end(), out_group);
    }
  }
  if (q.dtype() == DType::kF32) return out;
  return Cast(out, q.dtype());
}

}  // namespace kvcheck
