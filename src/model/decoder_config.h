// File: decoder_config.h
// DecoderConfig: the shape of a tiny (or not so tiny) decoder-only transformer.
//
//   gpt2   learned position embeddings, LayerNorm, GELU MLP, multi-head attention (KH == H),
//          biases everywhere, output head tied to the token embedding.
//   llama  RMSNorm, RoPE (rotate-half pairs (i, i + D/2), base rope_theta), SwiGLU MLP, GQA
//          (KH divides H), no biases, output head tied to the token embedding; with
//          sliding_window > 0 the even layers attend to the last sliding_window positions only
//          (Gemma-2 style alternation of local and global layers).
#ifndef KVCHECK_SRC_MODEL_DECODER_CONFIG_H_
#define KVCHECK_SRC_MODEL_DECODER_CONFIG_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace kvcheck::model {

enum class DecoderKind { kGpt2, kLlama };

const char* DecoderKindName(DecoderKind kind);

struct DecoderConfig {
  DecoderKind kind = DecoderKind::kGpt2;
  int64_t vocab_size = 0;
  int64_t context_length = 0;  // gpt2: rows of the position table; llama: the largest position + 1
  int64_t width = 0;           // model dimension
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;  // gpt2: == num_heads
  int64_t mlp_hidden = 0;    // gpt2: 4 * width; llama: the SwiGLU hidden size
  float norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  int64_t sliding_window = 0;  // llama: window of the even layers; 0 disables

  int64_t head_dim() const { return width / num_heads; }
  // The window of `layer`'s attention (0: none).
  int64_t layer_window(int64_t layer) const {
    return kind == DecoderKind::kLlama && sliding_window > 0 && layer % 2 == 0 ? sliding_window : 0;
  }
  // Parameters in the weights (the tied head counted once).
  int64_t num_parameters() const;

  // "gpt2 V=50257 C=1024 W=768 L=12 H=12 KH=12 F=3072".
  std::string ToString() const;

  // The 124M GPT-2 shape (vocab 50257, context 1024, width 768, 12 layers, 12 heads).
  static DecoderConfig Gpt2Small();
};

// Errors (kInvalidArgument, naming the field): a size <= 0 or past 2^24 (2^31 for the
// vocabulary), width not a multiple of num_heads, num_heads not a multiple of num_kv_heads,
// gpt2 with num_kv_heads != num_heads, an odd llama head_dim (RoPE pairs), a negative window,
// a non-finite or non-positive norm_eps or rope_theta.
absl::Status ValidateDecoderConfig(const DecoderConfig& config);

}  // namespace kvcheck::model

#endif  // KVCHECK_SRC_MODEL_DECODER_CONFIG_H_
