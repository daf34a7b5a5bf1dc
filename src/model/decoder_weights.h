// File: decoder_weights.h
// DecoderWeights: every parameter of a decoder as row-major f32 arrays, generated from a seed
// (untrained, as in seed 004) or read from / written to a weight file.
//
// Linear layers are stored [out, in] (y = W x + b). The canonical order of the tensors
// (ForEachWeight) is the order of the weight file and of RandomWeights' draws.
//
// Weight file (little-endian):
//   "KVCKWTS1"                                  8-byte magic
//   u32 n, then n bytes of "key=value\n" lines  the DecoderConfig (kind, vocab_size, ...)
//   u32 count                                   number of tensors
//   count times: u32 name length, name bytes, u32 rank, rank x i64 dims, f32 data
// bench/peers/gpt2_torch.py reads the same format.
#ifndef KVCHECK_SRC_MODEL_DECODER_WEIGHTS_H_
#define KVCHECK_SRC_MODEL_DECODER_WEIGHTS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/base/large_buffer.h"
#include "src/model/decoder_config.h"

namespace kvcheck::model {

// One weight tensor's values. Large ones lie on transparent huge pages
// (src/base/large_buffer.h): a decode step streams every matrix once, and most of GPT-2's
// (768 x 768, 2.25 MiB) would otherwise lie almost entirely on 4 KiB pages (decoder.cc).
using WeightArray = std::vector<float, LargeAwareAllocator<float>>;

struct LayerWeights {
  WeightArray attn_norm_weight, attn_norm_bias;  // [W]; bias: gpt2 only
  WeightArray wq, wk, wv;                        // [H*D, W], [KH*D, W], [KH*D, W]
  WeightArray bq, bk, bv;                        // gpt2 only
  WeightArray wo, bo;                            // [W, H*D], [W] (bias gpt2 only)
  WeightArray mlp_norm_weight, mlp_norm_bias;    // [W]; bias: gpt2 only
  WeightArray w_up, b_up;                        // [F, W]: gpt2 fc (with bias), llama up
  WeightArray w_gate;                            // [F, W]: llama only
  WeightArray w_down, b_down;                    // [W, F]: gpt2 proj (with bias), llama down
};

struct DecoderWeights {
  DecoderConfig config;
  WeightArray token_embedding;     // [V, W]; also the output head (tied)
  WeightArray position_embedding;  // [C, W]: gpt2 only
  std::vector<LayerWeights> layers;
  WeightArray final_norm_weight, final_norm_bias;  // [W]; bias: gpt2 only
};

// Elements of a weight tensor of `shape` (ValidateDecoderConfig keeps every product in range).
int64_t WeightElements(const std::vector<int64_t>& shape);

// Calls fn(name, shape, data) for every tensor of the config's kind in canonical order;
// `data` may be resized by fn (RandomWeights, LoadWeights) or read (SaveWeights).
void ForEachWeight(
    DecoderWeights& weights,
    const std::function<void(const std::string& name, const std::vector<int64_t>& shape,
                             WeightArray& data)>& fn);

// Untrained weights: linear layers and embeddings uniform with standard deviation 0.02 (GPT-2's
// initialisation scale), norm weights 1 + small noise, biases small noise; reproducible from
// `seed`. Errors: those of ValidateDecoderConfig.
absl::StatusOr<DecoderWeights> RandomWeights(const DecoderConfig& config, uint64_t seed);

// Errors: kInvalidArgument for a bad file (magic, config, tensor names or shapes), kNotFound /
// kDataLoss for I/O problems, naming the path.
absl::Status SaveWeights(const DecoderWeights& weights, const std::string& path);
absl::StatusOr<DecoderWeights> LoadWeights(const std::string& path);

}  // namespace kvcheck::model

#endif  // KVCHECK_SRC_MODEL_DECODER_WEIGHTS_H_
