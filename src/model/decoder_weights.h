// File: decoder_weights.h
// DecoderWeights: every parameter of a decoder as row-major f32 arrays in one arena (in the
// order a decode step reads them), generated from a seed (untrained, as in the KV-cache chapter
// of "Build a Large Language Model (From Scratch)") or read from / written to a weight file.
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
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/model/decoder_config.h"

namespace kvcheck::model {

struct DecoderWeights;

// One weight tensor's values: a view of `size()` floats in the arena of the DecoderWeights
// that holds it (empty until AllocateWeights gives it its place). Not copyable on its own:
// copying a DecoderWeights copies the values into a new arena.
class WeightArray {
 public:
  using value_type = float;
  using iterator = float*;
  using const_iterator = const float*;

  WeightArray() = default;
  WeightArray(const WeightArray&) = delete;
  WeightArray& operator=(const WeightArray&) = delete;
  WeightArray(WeightArray&& other) noexcept : data_(other.data_), size_(other.size_) {
    other.data_ = nullptr;
    other.size_ = 0;
  }
  WeightArray& operator=(WeightArray&& other) noexcept {
    data_ = other.data_;
    size_ = other.size_;
    other.data_ = nullptr;
    other.size_ = 0;
    return *this;
  }

  float* data() { return data_; }
  const float* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  float& operator[](size_t i) { return data_[i]; }
  const float& operator[](size_t i) const { return data_[i]; }
  float* begin() { return data_; }
  float* end() { return data_ + size_; }
  const float* begin() const { return data_; }
  const float* end() const { return data_ + size_; }

  // Same size and the same values (as floats compare: +0 == -0, NaN != NaN).
  friend bool operator==(const WeightArray& a, const WeightArray& b);

 private:
  friend absl::Status AllocateWeights(DecoderWeights& weights);
  float* data_ = nullptr;
  size_t size_ = 0;
};

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

// Every weight of a decoder lies in one arena (AllocateWeights), in the order a decode step
// reads them: the position table (gpt2), each layer's tensors, the final norm, and last the
// token embedding, which is also the output head. Each tensor starts on a 64-byte boundary.
// The arena lies on transparent huge pages (src/base/large_buffer.h), advised before its
// first touch. A decode step streams the whole arena once, front to back; with a separate
// allocation per tensor, each would start a new stream and its tail (a 768 x 768 matrix is
// 2.25 MiB) would lie on 4 KiB pages. Measured with generation_benchmark's paired runs
// (docs/generation.md).
struct DecoderWeights {
  DecoderWeights() = default;
  // Copies the values into a new arena (throws std::bad_alloc where that allocation fails).
  DecoderWeights(const DecoderWeights& other);
  DecoderWeights& operator=(const DecoderWeights& other);
  DecoderWeights(DecoderWeights&&) = default;  // the arena moves, the views stay valid
  DecoderWeights& operator=(DecoderWeights&&) = default;

  DecoderConfig config;
  WeightArray token_embedding;     // [V, W]; also the output head (tied)
  WeightArray position_embedding;  // [C, W]: gpt2 only
  std::vector<LayerWeights> layers;
  WeightArray final_norm_weight, final_norm_bias;  // [W]; bias: gpt2 only
  // The arena every WeightArray above points into (null before AllocateWeights).
  std::shared_ptr<float> arena;
};

// Gives every tensor of `weights.config` its place in a new zeroed arena, replacing any
// earlier one. Errors: those of ValidateDecoderConfig; kResourceExhausted if the arena cannot
// be allocated or its size passes 2^63 bytes (weights unchanged then).
absl::Status AllocateWeights(DecoderWeights& weights);

// Elements of a weight tensor of `shape` (ValidateDecoderConfig keeps every product in range).
int64_t WeightElements(const std::vector<int64_t>& shape);

// Calls fn(name, shape, data) for every tensor of the config's kind in canonical order (the
// weight file's, not the arena's); fn may write `data`'s values (RandomWeights, LoadWeights,
// after AllocateWeights) or read them (SaveWeights).
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
