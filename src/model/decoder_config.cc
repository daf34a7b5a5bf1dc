#include "src/model/decoder_config.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace kvcheck::model {

const char* DecoderKindName(DecoderKind kind) {
  return kind == DecoderKind::kGpt2 ? "gpt2" : "llama";
}

int64_t DecoderConfig::num_parameters() const {
  const int64_t D = head_dim();
  int64_t per_layer = 0;
  if (kind == DecoderKind::kGpt2) {
    per_layer = 2 * width                                                        // ln1
                + 3 * width * width + 3 * width                                  // qkv
                + width * width + width                                          // attention output
                + 2 * width                                                      // ln2
                + mlp_hidden * width + mlp_hidden + width * mlp_hidden + width;  // mlp
  } else {
    per_layer = width                                         // attention norm
                + (num_heads + 2 * num_kv_heads) * D * width  // q, k, v
                + width * num_heads * D                       // attention output
                + width + 3 * mlp_hidden * width;             // norm, gate, up, down
  }
  const int64_t positions = kind == DecoderKind::kGpt2 ? context_length * width : 0;
  const int64_t final_norm = kind == DecoderKind::kGpt2 ? 2 * width : width;
  return vocab_size * width + positions + num_layers * per_layer + final_norm;
}

std::string DecoderConfig::ToString() const {
  std::string s =
      absl::StrCat(DecoderKindName(kind), " V=", vocab_size, " C=", context_length, " W=", width,
                   " L=", num_layers, " H=", num_heads, " KH=", num_kv_heads, " F=", mlp_hidden);
  if (sliding_window > 0) absl::StrAppend(&s, " window=", sliding_window, " (even layers)");
  return s;
}

DecoderConfig DecoderConfig::Gpt2Small() {
  DecoderConfig c;
  c.kind = DecoderKind::kGpt2;
  c.vocab_size = 50257;
  c.context_length = 1024;
  c.width = 768;
  c.num_layers = 12;
  c.num_heads = 12;
  c.num_kv_heads = 12;
  c.mlp_hidden = 3072;
  return c;
}

absl::Status ValidateDecoderConfig(const DecoderConfig& c) {
  constexpr int64_t kMaxSize = int64_t{1} << 24;
  const struct {
    const char* name;
    int64_t value;
    int64_t max;
  } sizes[] = {{"vocab_size", c.vocab_size, int64_t{1} << 31},
               {"context_length", c.context_length, kMaxSize},
               {"width", c.width, kMaxSize},
               {"num_layers", c.num_layers, 4096},
               {"num_heads", c.num_heads, kMaxSize},
               {"num_kv_heads", c.num_kv_heads, kMaxSize},
               {"mlp_hidden", c.mlp_hidden, kMaxSize}};
  for (const auto& size : sizes) {
    if (size.value <= 0 || size.value > size.max) {
      return absl::InvalidArgumentError(absl::StrCat(
          "decoder config: ", size.name, " is ", size.value, "; must be in [1, ", size.max, "]"));
    }
  }
  if (c.width % c.num_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "decoder config: width ", c.width, " is not a multiple of num_heads ", c.num_heads));
  }
  if (c.num_heads % c.num_kv_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat("decoder config: num_heads ", c.num_heads,
                                                   " is not a multiple of num_kv_heads ",
                                                   c.num_kv_heads));
  }
  if (c.kind == DecoderKind::kGpt2 && c.num_kv_heads != c.num_heads) {
    return absl::InvalidArgumentError("decoder config: gpt2 needs num_kv_heads == num_heads");
  }
  if (c.kind == DecoderKind::kLlama && c.head_dim() % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat("decoder config: llama head_dim ", c.head_dim(),
                                                   " is odd (RoPE rotates pairs)"));
  }
  if (c.sliding_window < 0) {
    return absl::InvalidArgumentError("decoder config: sliding_window is negative");
  }
  if (!(std::isfinite(c.norm_eps) && c.norm_eps > 0) ||
      !(std::isfinite(c.rope_theta) && c.rope_theta > 0)) {
    return absl::InvalidArgumentError(
        "decoder config: norm_eps and rope_theta must be finite and > 0");
  }
  return absl::OkStatus();
}

}  // namespace kvcheck::model
