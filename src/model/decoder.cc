#include "src/model/decoder.h"

#include <algorithm>
#include <memory>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/model/gemv.h"
#include "src/tensor/copy_ops.h"
#include "src/tensor/view_ops.h"

namespace kvcheck::model {
namespace {

// Heads [first, first + count) of a (B, S, heads, D) tensor as the (B, count, S, D) tensor
// attention and caches take: a narrowed, transposed (non-contiguous) view of the same storage.
absl::StatusOr<Tensor> HeadsView(const Tensor& rows, int64_t first, int64_t count) {
  KV_ASSIGN_OR_RETURN(Tensor heads, Narrow(rows, 2, first, count));
  return Transpose(heads, 1, 2);
}

// The decoder's normalisation of `rows` rows: LayerNorm with bias (gpt2) or RMSNorm (llama).
void Normalize(const DecoderConfig& c, const float* x, int64_t rows,
               const WeightArray& weight, const WeightArray& bias, float* y) {
  if (c.kind == DecoderKind::kGpt2) {
    LayerNorm(x, rows, c.width, weight.data(), bias.data(), c.norm_eps, y);
  } else {
    RmsNorm(x, rows, c.width, weight.data(), c.norm_eps, y);
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<Decoder>> Decoder::Create(DecoderWeights weights) {
  KV_RETURN_IF_ERROR(ValidateDecoderConfig(weights.config));
  DecoderWeights& w = weights;
  absl::Status status;
  const float* arena_end = w.arena.get();  // past the last value of any tensor
  ForEachWeight(
      w, [&](const std::string& name, const std::vector<int64_t>& shape, WeightArray& data) {
        const int64_t expected = WeightElements(shape);
        if (status.ok() && static_cast<int64_t>(data.size()) != expected) {
          status = absl::InvalidArgumentError(absl::StrCat(
              "decoder: tensor ", name, " has ", data.size(), " values, expected ", expected));
        }
        if (!data.empty()) arena_end = std::max<const float*>(arena_end, data.end());
      });
  KV_RETURN_IF_ERROR(status);
  // Every matrix is streamed once per decode step. The weights' arena (decoder_weights.h)
  // was advised for huge pages before its first touch; AdviseHugePages, once over the whole
  // arena, collapses any of its pages the kernel could not make huge at that touch (it spares
  // the TLB a miss per 4 KiB per stream, and lets the hardware prefetcher run past 4 KiB
  // boundaries).
  if (w.arena != nullptr) AdviseHugePages(w.arena.get(), arena_end - w.arena.get());
  return std::unique_ptr<Decoder>(new Decoder(std::move(weights)));
}

absl::StatusOr<std::vector<float>> Decoder::Forward(absl::Span<const int32_t> tokens,
                                                    ForwardPositions positions,
                                                    absl::Span<KvCache* const> caches,
                                                    const ForwardOptions& options) const {
  const int64_t S = static_cast<int64_t>(tokens.size());
  if (S == 0) return absl::InvalidArgumentError("decoder: no tokens to run");
  if (options.logits_rows < 1 || options.logits_rows > S) {
    return absl::InvalidArgumentError(
        absl::StrCat("decoder: logits_rows ", options.logits_rows, " outside [1, ", S, "]"));
  }
  RowPositions rows;
  rows.first = {positions.first};
  rows.query_first = {positions.query_first};
  return Run(tokens, 1, S, rows, caches, options);
}

absl::StatusOr<std::vector<float>> Decoder::ForwardBatch(const BatchChunk& chunk,
                                                         absl::Span<KvCache* const> caches,
                                                         const ForwardOptions& options) const {
  const int64_t B = static_cast<int64_t>(chunk.tokens.size());
  if (B == 0) return absl::InvalidArgumentError("decoder: a batch of no rows");
  const int64_t S = static_cast<int64_t>(chunk.tokens[0].size());
  if (S == 0) return absl::InvalidArgumentError("decoder: no tokens to run");
  if (static_cast<int64_t>(chunk.first.size()) != B) {
    return absl::InvalidArgumentError(
        absl::StrCat("decoder: ", chunk.first.size(), " first positions for ", B, " rows"));
  }
  if (!chunk.active.empty() && static_cast<int64_t>(chunk.active.size()) != B) {
    return absl::InvalidArgumentError(
        absl::StrCat("decoder: ", chunk.active.size(), " active flags for ", B, " rows"));
  }
  if (options.logits_rows != 1) {
    return absl::InvalidArgumentError("decoder: a batch returns the logits of one token a row");
  }
  std::vector<int32_t> tokens;
  tokens.reserve(B * S);
  for (int64_t b = 0; b < B; ++b) {
    if (static_cast<int64_t>(chunk.tokens[b].size()) != S) {
      return absl::InvalidArgumentError(absl::StrCat("decoder: row ", b, " has ",
                                                     chunk.tokens[b].size(), " tokens, row 0 ", S));
    }
    tokens.insert(tokens.end(), chunk.tokens[b].begin(), chunk.tokens[b].end());
  }
  RowPositions rows;
  rows.first = chunk.first;
  rows.query_first = chunk.first;
  rows.active = chunk.active;
  return Run(tokens, B, S, rows, caches, options);
}

absl::StatusOr<std::vector<float>> Decoder::Run(absl::Span<const int32_t> tokens, int64_t B,
                                                int64_t S, const RowPositions& rows,
                                                absl::Span<KvCache* const> caches,
                                                const ForwardOptions& options) const {
  const DecoderConfig& c = config();
  for (int64_t i = 0; i < B * S; ++i) {
    if (tokens[i] < 0 || tokens[i] >= c.vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "decoder: token ", i, " is ", tokens[i], "; the vocabulary is [0, ", c.vocab_size, ")"));
    }
  }
  for (int64_t b = 0; b < B; ++b) {
    if (rows.first[b] < 0 || rows.query_first[b] < 0 || rows.first[b] > c.context_length - S) {
      return absl::OutOfRangeError(absl::StrCat(B > 1 ? absl::StrCat("decoder: row ", b, ": ")
                                                      : std::string("decoder: "),
                                                "positions [", rows.first[b], ", ",
                                                rows.first[b] + S, ") pass the context length ",
                                                c.context_length));
    }
  }
  if (!caches.empty() && static_cast<int64_t>(caches.size()) != c.num_layers) {
    return absl::InvalidArgumentError(
        absl::StrCat("decoder: ", caches.size(), " caches for ", c.num_layers, " layers"));
  }
  if (!options.layer_windows.empty() &&
      static_cast<int64_t>(options.layer_windows.size()) != c.num_layers) {
    return absl::InvalidArgumentError("decoder: layer_windows needs one window per layer");
  }
  const int64_t W = c.width;
  // x = token embedding (+ position embedding for gpt2).
  std::vector<float> x(B * S * W);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < S; ++i) {
      const int64_t row = b * S + i;
      const float* e = weights_.token_embedding.data() + int64_t{tokens[row]} * W;
      std::copy(e, e + W, x.begin() + row * W);
      if (c.kind == DecoderKind::kGpt2) {
        const float* p = weights_.position_embedding.data() + (rows.first[b] + i) * W;
        for (int64_t j = 0; j < W; ++j) x[row * W + j] += p[j];
      }
    }
  }
  const AttentionKernel* kernel =
      options.kernel != nullptr ? options.kernel : FindAttentionKernel("flash");
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const int64_t window =
        options.layer_windows.empty() ? c.layer_window(l) : options.layer_windows[l];
    KV_RETURN_IF_ERROR(Layer(l, x, B, S, rows, caches.empty() ? nullptr : caches[l], window,
                             *kernel, options));
  }
  // Final norm and the tied head over the last logits_rows rows of each sequence.
  const int64_t per_row = options.logits_rows;
  std::vector<float> last(B * per_row * W);
  for (int64_t b = 0; b < B; ++b) {
    std::copy_n(x.data() + (b * S + S - per_row) * W, per_row * W, last.data() + b * per_row * W);
  }
  std::vector<float> normed(B * per_row * W);
  Normalize(c, last.data(), B * per_row, weights_.final_norm_weight, weights_.final_norm_bias,
            normed.data());
  std::vector<float> logits(B * per_row * c.vocab_size);
  Linear(normed.data(), B * per_row, W, weights_.token_embedding.data(), nullptr, c.vocab_size,
         logits.data(), options.matmul, options.num_threads);
  return logits;
}

absl::Status Decoder::Layer(int64_t layer, std::vector<float>& x, int64_t B, int64_t S,
                            const RowPositions& rows, KvCache* cache, int64_t window,
                            const AttentionKernel& kernel, const ForwardOptions& options) const {
  const DecoderConfig& c = config();
  const LayerWeights& w = weights_.layers[layer];
  const bool gpt2 = c.kind == DecoderKind::kGpt2;
  const int64_t W = c.width, H = c.num_heads, KH = c.num_kv_heads, D = c.head_dim(),
                F = c.mlp_hidden;
  auto bias = [gpt2](const WeightArray& b) { return gpt2 ? b.data() : nullptr; };

  const int64_t N = B * S;  // the tokens of every row: the per-token work runs over all of them

  // Attention block: h = norm(x); q, k, v projections; RoPE (llama); cache; attention.
  std::vector<float> h(N * W);
  Normalize(c, x.data(), N, w.attn_norm_weight, w.attn_norm_bias, h.data());
  const int64_t QD = H * D, KD = KH * D, QKV = QD + 2 * KD;
  // q, k and v of each position side by side, [S, H + 2 KH, D]: attention and the cache take
  // narrowed, transposed views of it (strided inputs, which both accept), so a decode step
  // copies none of them; nor, below, the heads' output. The layers' work outside the
  // products and attention, 199 decode steps of the 124M model on a Zen 4 VM (three
  // alternating pairs each, 2026-12-05): 0.042 s before, 0.030-0.031 after on one thread;
  // 0.053-0.054 before, 0.037-0.041 after on two (0.07 ms of a 9 ms step).
  KV_ASSIGN_OR_RETURN(Tensor qkv, Tensor::Uninitialized(DType::kF32, {B, S, H + 2 * KH, D}));
  float* const qkv_rows = qkv.data<float>();
  // One product for q, k and v where their matrices (and biases) lie back to back, as the
  // weights' arena places them whenever each is a whole number of 16-float blocks
  // (decoder_weights.h): a decode step's threads then meet once per layer for the three
  // instead of three times, and start their streams once. Only where Linear takes the GEMV
  // (or the plain path), whose every output's bits do not depend on the matrix it is a row
  // of; sgemm's blocking might.
  const bool fused =
      (options.matmul == MatmulPath::kPlain || N <= GemvBatchLimit()) &&
      w.wk.data() == w.wq.data() + QD * W && w.wv.data() == w.wk.data() + KD * W &&
      (!gpt2 || (w.bk.data() == w.bq.data() + QD && w.bv.data() == w.bk.data() + KD));
  if (fused) {
    Linear(h.data(), N, W, w.wq.data(), bias(w.bq), QKV, qkv_rows, options.matmul,
           options.num_threads);
  } else {
    std::vector<float> q(N * QD), k(N * KD), v(N * KD);
    Linear(h.data(), N, W, w.wq.data(), bias(w.bq), QD, q.data(), options.matmul,
           options.num_threads);
    Linear(h.data(), N, W, w.wk.data(), bias(w.bk), KD, k.data(), options.matmul,
           options.num_threads);
    Linear(h.data(), N, W, w.wv.data(), bias(w.bv), KD, v.data(), options.matmul,
           options.num_threads);
    for (int64_t i = 0; i < N; ++i) {
      float* row = qkv_rows + i * QKV;
      std::copy_n(q.data() + i * QD, QD, row);
      std::copy_n(k.data() + i * KD, KD, row + QD);
      std::copy_n(v.data() + i * KD, KD, row + QD + KD);
    }
  }
  if (!gpt2) {
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t i = 0; i < S; ++i) {
        float* row = qkv_rows + (b * S + i) * QKV;
        ApplyRope(row, 1, H, D, rows.first[b] + i, c.rope_theta);
        ApplyRope(row + QD, 1, KH, D, rows.first[b] + i, c.rope_theta);
      }
    }
  }
  KV_ASSIGN_OR_RETURN(Tensor q_view, HeadsView(qkv, 0, H));
  KV_ASSIGN_OR_RETURN(Tensor k_view, HeadsView(qkv, H, KH));
  KV_ASSIGN_OR_RETURN(Tensor v_view, HeadsView(qkv, H + KH, KH));
  AttentionParams params;
  params.causal = true;
  params.window = window;
  params.q_positions.resize(N);
  for (int64_t b = 0; b < B; ++b) {
    std::iota(params.q_positions.begin() + b * S, params.q_positions.begin() + (b + 1) * S,
              rows.query_first[b]);
  }
  // Every row appends (Append), or the active ones (AppendActive).
  std::unique_ptr<bool[]> active_flags;
  if (!rows.active.empty()) {
    active_flags.reset(new bool[B]);
    std::copy(rows.active.begin(), rows.active.end(), active_flags.get());
  }
  auto append = [&]() -> absl::StatusOr<CacheView> {
    if (active_flags == nullptr) return cache->Append(k_view, v_view);
    return cache->AppendActive(k_view, v_view, absl::MakeConstSpan(active_flags.get(), B));
  };
  Tensor keys = k_view, values = v_view;
  if (cache != nullptr && window > 0 && S > 1) {
    // A windowed cache keeps only the last `window` positions, so after appending a chunk it
    // no longer holds keys that the chunk's earlier queries need (query p may look back to
    // p - window + 1). Attend over what was visible before the chunk plus the chunk itself,
    // copied before the append can overwrite ring slots; the mask does the windowing.
    KV_ASSIGN_OR_RETURN(const CacheView before, cache->View());
    if (before.length() > 0) {
      KV_ASSIGN_OR_RETURN(keys, Cat({before.k, k_view}, 2));
      KV_ASSIGN_OR_RETURN(values, Cat({before.v, v_view}, 2));
    }
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t j = 0; j < before.length(); ++j) {
        params.kv_positions.push_back(before.position(b, j));
      }
      for (int64_t i = 0; i < S; ++i) params.kv_positions.push_back(rows.first[b] + i);
    }
    KV_RETURN_IF_ERROR(append().status());
  } else if (cache != nullptr) {
    KV_ASSIGN_OR_RETURN(CacheView view, append());
    keys = view.k;
    values = view.v;
    params.kv_positions = std::move(view.positions);
  } else {
    params.kv_positions.resize(N);
    for (int64_t b = 0; b < B; ++b) {
      std::iota(params.kv_positions.begin() + b * S, params.kv_positions.begin() + (b + 1) * S,
                rows.first[b]);
    }
  }
  KV_ASSIGN_OR_RETURN(Tensor out, kernel.run(q_view, keys, values, params, options.num_threads));
  // (B, H, S, D) -> [B * S, H * D]: the output with heads and positions swapped, in row-major
  // order. For one position a row a contiguous f32 output already is that.
  const float* merged_rows = nullptr;
  std::vector<float> merged;
  if (S == 1 && out.dtype() == DType::kF32 && out.is_contiguous()) {
    merged_rows = out.data<float>();
  } else {
    KV_ASSIGN_OR_RETURN(const Tensor positions_major, Transpose(out, 1, 2));
    merged = positions_major.ToFloats();
    merged_rows = merged.data();
  }
  std::vector<float> attn(N * W);
  Linear(merged_rows, N, H * D, w.wo.data(), bias(w.bo), W, attn.data(), options.matmul,
         options.num_threads);
  for (int64_t i = 0; i < N * W; ++i) x[i] += attn[i];

  // MLP block: x += down(act(up(norm(x)))).
  Normalize(c, x.data(), N, w.mlp_norm_weight, w.mlp_norm_bias, h.data());
  std::vector<float> up(N * F);
  Linear(h.data(), N, W, w.w_up.data(), bias(w.b_up), F, up.data(), options.matmul,
         options.num_threads);
  if (gpt2) {
    GeluInPlace(up.data(), N * F);
  } else {
    std::vector<float> gate(N * F);
    Linear(h.data(), N, W, w.w_gate.data(), nullptr, F, gate.data(), options.matmul,
           options.num_threads);
    SwiGluInPlace(gate.data(), up.data(), N * F);
    up.swap(gate);
  }
  std::vector<float> down(N * W);
  Linear(up.data(), N, F, w.w_down.data(), bias(w.b_down), W, down.data(), options.matmul,
         options.num_threads);
  for (int64_t i = 0; i < N * W; ++i) x[i] += down[i];
  return absl::OkStatus();
}

}  // namespace kvcheck::model
