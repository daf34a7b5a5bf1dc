#include "reference/reference_decoder.h"

#include <algorithm>

#include "boost/math/constants/constants.hpp"
#include "reference/real.h"
#include "src/base/check.h"

namespace kvcheck::reference {
namespace {

using model::DecoderConfig;
using model::DecoderKind;
using model::LayerWeights;
using Matrix = std::vector<Real>;  // row-major

// y[r, n] = sum_k x[r, k] w[n, k] + b[n].
Matrix Linear(const Matrix& x, int64_t rows, int64_t in, const model::WeightArray& w,
              const model::WeightArray* b, int64_t out) {
  Matrix y(rows * out);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t n = 0; n < out; ++n) {
      Real sum = b != nullptr ? Real((*b)[n]) : Real(0);
      for (int64_t k = 0; k < in; ++k) sum += x[r * in + k] * Real(w[n * in + k]);
      y[r * out + n] = sum;
    }
  }
  return y;
}

Matrix Norm(const DecoderConfig& c, const Matrix& x, int64_t rows, const model::WeightArray& weight,
            const model::WeightArray& bias) {
  const int64_t W = c.width;
  Matrix y(rows * W);
  for (int64_t r = 0; r < rows; ++r) {
    if (c.kind == DecoderKind::kGpt2) {
      Real mean = 0, var = 0;
      for (int64_t i = 0; i < W; ++i) mean += x[r * W + i];
      mean /= W;
      for (int64_t i = 0; i < W; ++i) var += (x[r * W + i] - mean) * (x[r * W + i] - mean);
      var /= W;
      const Real inv = 1 / sqrt(var + Real(c.norm_eps));
      for (int64_t i = 0; i < W; ++i) {
        y[r * W + i] = (x[r * W + i] - mean) * inv * Real(weight[i]) + Real(bias[i]);
      }
    } else {
      Real sum_sq = 0;
      for (int64_t i = 0; i < W; ++i) sum_sq += x[r * W + i] * x[r * W + i];
      const Real inv = 1 / sqrt(sum_sq / W + Real(c.norm_eps));
      for (int64_t i = 0; i < W; ++i) y[r * W + i] = x[r * W + i] * inv * Real(weight[i]);
    }
  }
  return y;
}

// RoPE on [S, heads, D]: pair (i, i + D/2) of token s rotated by s * theta^(-2i/D).
void Rope(Matrix& x, int64_t S, int64_t heads, int64_t D, float theta) {
  const int64_t half = D / 2;
  for (int64_t s = 0; s < S; ++s) {
    for (int64_t i = 0; i < half; ++i) {
      const Real angle = Real(s) * pow(Real(theta), Real(-2 * i) / Real(D));
      const Real cs = cos(angle), sn = sin(angle);
      for (int64_t h = 0; h < heads; ++h) {
        Real& a = x[(s * heads + h) * D + i];
        Real& b = x[(s * heads + h) * D + i + half];
        const Real a0 = a, b0 = b;
        a = a0 * cs - b0 * sn;
        b = a0 * sn + b0 * cs;
      }
    }
  }
}

void AddLayer(const DecoderConfig& c, const LayerWeights& w, int64_t window, Matrix& x, int64_t S) {
  const bool gpt2 = c.kind == DecoderKind::kGpt2;
  const int64_t W = c.width, H = c.num_heads, KH = c.num_kv_heads, D = c.head_dim(),
                F = c.mlp_hidden;
  Matrix h = Norm(c, x, S, w.attn_norm_weight, w.attn_norm_bias);
  Matrix q = Linear(h, S, W, w.wq, gpt2 ? &w.bq : nullptr, H * D);
  Matrix k = Linear(h, S, W, w.wk, gpt2 ? &w.bk : nullptr, KH * D);
  Matrix v = Linear(h, S, W, w.wv, gpt2 ? &w.bv : nullptr, KH * D);
  if (!gpt2) {
    Rope(q, S, H, D, c.rope_theta);
    Rope(k, S, KH, D, c.rope_theta);
  }
  // Causal softmax attention per head, query s over keys j <= s (and s - j < window).
  const Real scale = 1 / sqrt(Real(D));
  Matrix merged(S * H * D);
  for (int64_t hh = 0; hh < H; ++hh) {
    const int64_t kv = hh / (H / KH);
    for (int64_t s = 0; s < S; ++s) {
      const int64_t first = window > 0 ? std::max<int64_t>(0, s - window + 1) : 0;
      std::vector<Real> score(s + 1 - first);
      Real max_score = 0;
      for (int64_t j = first; j <= s; ++j) {
        Real dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += q[(s * H + hh) * D + d] * k[(j * KH + kv) * D + d];
        score[j - first] = dot * scale;
        if (j == first || score[j - first] > max_score) max_score = score[j - first];
      }
      Real total = 0;
      for (Real& t : score) {
        t = exp(t - max_score);
        total += t;
      }
      for (int64_t d = 0; d < D; ++d) {
        Real out = 0;
        for (int64_t j = first; j <= s; ++j) out += score[j - first] * v[(j * KH + kv) * D + d];
        merged[(s * H + hh) * D + d] = out / total;
      }
    }
  }
  const Matrix attn = Linear(merged, S, H * D, w.wo, gpt2 ? &w.bo : nullptr, W);
  for (int64_t i = 0; i < S * W; ++i) x[i] += attn[i];

  h = Norm(c, x, S, w.mlp_norm_weight, w.mlp_norm_bias);
  Matrix up = Linear(h, S, W, w.w_up, gpt2 ? &w.b_up : nullptr, F);
  if (gpt2) {
    const Real k0 = sqrt(Real(2) / boost::math::constants::pi<Real>());
    for (Real& u : up) u = Real(0.5) * u * (1 + tanh(k0 * (u + Real(0.044715) * u * u * u)));
  } else {
    const Matrix gate = Linear(h, S, W, w.w_gate, nullptr, F);
    for (int64_t i = 0; i < S * F; ++i) up[i] = gate[i] / (1 + exp(-gate[i])) * up[i];
  }
  const Matrix down = Linear(up, S, F, w.w_down, gpt2 ? &w.b_down : nullptr, W);
  for (int64_t i = 0; i < S * W; ++i) x[i] += down[i];
}

}  // namespace

std::vector<double> ReferenceDecoderLogits(const model::DecoderWeights& weights,
                                           absl::Span<const int32_t> tokens,
                                           absl::Span<const int64_t> layer_windows) {
  const DecoderConfig& c = weights.config;
  const int64_t S = static_cast<int64_t>(tokens.size()), W = c.width;
  KV_CHECK(S <= c.context_length);
  KV_CHECK(layer_windows.empty() || static_cast<int64_t>(layer_windows.size()) == c.num_layers);
  Matrix x(S * W);
  for (int64_t s = 0; s < S; ++s) {
    KV_CHECK(tokens[s] >= 0 && tokens[s] < c.vocab_size);
    for (int64_t i = 0; i < W; ++i) {
      x[s * W + i] = Real(weights.token_embedding[int64_t{tokens[s]} * W + i]);
      if (c.kind == DecoderKind::kGpt2) x[s * W + i] += Real(weights.position_embedding[s * W + i]);
    }
  }
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const int64_t window = layer_windows.empty() ? c.layer_window(l) : layer_windows[l];
    AddLayer(c, weights.layers[l], window, x, S);
  }
  const Matrix normed = Norm(c, x, S, weights.final_norm_weight, weights.final_norm_bias);
  const Matrix logits = Linear(normed, S, W, weights.token_embedding, nullptr, c.vocab_size);
  std::vector<double> out(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) out[i] = ToDouble(logits[i]);
  return out;
}

}  // namespace kvcheck::reference
