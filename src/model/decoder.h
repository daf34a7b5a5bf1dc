// File: decoder.h
// Decoder: the forward pass of a gpt2 or llama decoder (decoder_config.h) over a chunk of
// tokens, with one KV cache per layer or none.
//
// Forward(tokens, positions, caches, options):
//   - token i sits at absolute position positions.first + i: gpt2 adds position embedding
//     row first + i, llama rotates q and k by that position (RoPE);
//   - with caches (one per layer), each layer appends the chunk's K and V, given as (1, KH, S, D)
//     views transposed out of the [S, KH, D] projection (the non-contiguous prefill that candle's
//     KvCache rejects), and attends to what the cache returns (a windowed layer fed more than one
//     token attends to what the cache showed before the chunk plus the chunk: the cache itself
//     keeps only the last window positions); without caches it attends to the chunk's own K and V
//     (a full recomputation feeds the whole sequence);
//   - attention is causal with the query of token i at positions.query_first + i (the mask is
//     built from absolute positions; correct callers pass query_first == first), and
//     layer_windows[l] > 0 restricts layer l to that many most recent positions;
//   - returns the logits of the last `logits_rows` tokens, [logits_rows, V] row-major.
// Errors: kInvalidArgument for an empty chunk, a token outside [0, V), a wrong number of
// caches or windows, logits_rows outside [1, S]; kOutOfRange if a position passes
// context_length; kNotFound for an unknown kernel; then those of the caches and kernels.
// Arguments are validated before any cache is touched.
#ifndef KVCHECK_SRC_MODEL_DECODER_H_
#define KVCHECK_SRC_MODEL_DECODER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "src/cache/kv_cache.h"
#include "src/attention/kernel_registry.h"
#include "src/model/decoder_weights.h"
#include "src/model/layer_ops.h"

namespace kvcheck::model {

struct ForwardPositions {
  int64_t first = 0;        // position of tokens[0] (embeddings, RoPE)
  int64_t query_first = 0;  // position the causal mask gives tokens[0]
};

struct ForwardOptions {
  const AttentionKernel* kernel = nullptr;  // nullptr: "flash"
  int num_threads = 1;
  MatmulPath matmul = MatmulPath::kOptimized;
  std::vector<int64_t> layer_windows;  // one per layer (0: full); empty: the config's windows
  int64_t logits_rows = 1;
};

// Several sequences run together (ForwardBatch): batch row b runs tokens[b] (every row the same
// number S >= 1 of tokens) with token i at position first[b] + i (embeddings, RoPE and the
// causal mask), through caches whose batch rows are the sequences. Rows with active[b] false
// are computed on but neither write the caches (KvCache::AppendActive) nor count: their
// logits are unspecified. `active` empty: every row is active.
struct BatchChunk {
  std::vector<std::vector<int32_t>> tokens;
  std::vector<int64_t> first;
  std::vector<bool> active;
};

class Decoder {
 public:
  // Errors: ValidateDecoderConfig, and kInvalidArgument if a tensor has the wrong size.
  static absl::StatusOr<std::unique_ptr<Decoder>> Create(DecoderWeights weights);

  const DecoderConfig& config() const { return weights_.config; }
  const DecoderWeights& weights() const { return weights_; }

  // `caches` is empty (no cache) or holds one cache per layer.
  absl::StatusOr<std::vector<float>> Forward(absl::Span<const int32_t> tokens,
                                             ForwardPositions positions,
                                             absl::Span<KvCache* const> caches,
                                             const ForwardOptions& options) const;

  // The rows of `chunk` together: the logits of each row's last token, [B, V] row-major
  // (options.logits_rows must be 1). Errors: as Forward, per row, and kInvalidArgument for
  // rows of different lengths, no rows, or an `active` of the wrong length.
  absl::StatusOr<std::vector<float>> ForwardBatch(const BatchChunk& chunk,
                                                  absl::Span<KvCache* const> caches,
                                                  const ForwardOptions& options) const;

 private:
  explicit Decoder(DecoderWeights weights) : weights_(std::move(weights)) {}

  // Where the rows of a (B, S) chunk sit: row b's token i at first[b] + i, its query at
  // query_first[b] + i; `active` as BatchChunk's.
  struct RowPositions {
    std::vector<int64_t> first, query_first;
    std::vector<bool> active;
  };
  // The checks both entry points share, then the layers over x [B * S, W] and the head.
  absl::StatusOr<std::vector<float>> Run(absl::Span<const int32_t> tokens, int64_t B, int64_t S,
                                         const RowPositions& rows,
                                         absl::Span<KvCache* const> caches,
                                         const ForwardOptions& options) const;
  // One layer over x [B * S, W] in place.
  absl::Status Layer(int64_t layer, std::vector<float>& x, int64_t B, int64_t S,
                     const RowPositions& rows, KvCache* cache, int64_t window,
                     const AttentionKernel& kernel, const ForwardOptions& options) const;

  DecoderWeights weights_;
};

}  // namespace kvcheck::model

#endif  // KVCHECK_SRC_MODEL_DECODER_H_
