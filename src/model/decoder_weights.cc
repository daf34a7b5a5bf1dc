#include "src/model/decoder_weights.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <new>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "src/base/checked_math.h"
#include "src/base/large_buffer.h"
#include "src/base/split_mix.h"
#include "src/base/status_macros.h"

namespace kvcheck::model {
namespace {

constexpr char kMagic[8] = {'K', 'V', 'C', 'K', 'W', 'T', 'S', '1'};

// Nine significant digits read back as the same float; StrCat's six do not (1234567 would
// load as 1234570).
std::string ExactFloatText(float value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", static_cast<double>(value));
  return text;
}

std::string ConfigText(const DecoderConfig& c) {
  return absl::StrCat("kind=", DecoderKindName(c.kind), "\nvocab_size=", c.vocab_size,
                      "\ncontext_length=", c.context_length, "\nwidth=", c.width,
                      "\nnum_layers=", c.num_layers, "\nnum_heads=", c.num_heads,
                      "\nnum_kv_heads=", c.num_kv_heads, "\nmlp_hidden=", c.mlp_hidden,
                      "\nnorm_eps=", ExactFloatText(c.norm_eps),
                      "\nrope_theta=", ExactFloatText(c.rope_theta),
                      "\nsliding_window=", c.sliding_window, "\n");
}

absl::StatusOr<DecoderConfig> ParseConfig(const std::string& text) {
  std::map<std::string, std::string> fields;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    const std::pair<std::string, std::string> kv = absl::StrSplit(line, absl::MaxSplits('=', 1));
    fields[kv.first] = kv.second;
  }
  DecoderConfig c;
  if (fields["kind"] == "gpt2") {
    c.kind = DecoderKind::kGpt2;
  } else if (fields["kind"] == "llama") {
    c.kind = DecoderKind::kLlama;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("weights: unknown kind '", fields["kind"], "'"));
  }
  const std::pair<const char*, int64_t*> ints[] = {
      {"vocab_size", &c.vocab_size}, {"context_length", &c.context_length},
      {"width", &c.width},           {"num_layers", &c.num_layers},
      {"num_heads", &c.num_heads},   {"num_kv_heads", &c.num_kv_heads},
      {"mlp_hidden", &c.mlp_hidden}, {"sliding_window", &c.sliding_window}};
  for (const auto& [name, value] : ints) {
    if (!absl::SimpleAtoi(fields[name], value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("weights: config field ", name, " is '", fields[name], "'"));
    }
  }
  if (!absl::SimpleAtof(fields["norm_eps"], &c.norm_eps) ||
      !absl::SimpleAtof(fields["rope_theta"], &c.rope_theta)) {
    return absl::InvalidArgumentError("weights: norm_eps or rope_theta unreadable");
  }
  KV_RETURN_IF_ERROR(ValidateDecoderConfig(c));
  return c;
}

// SplitMix64 stream -> uniform floats in [-1, 1).
class UniformStream {
 public:
  explicit UniformStream(uint64_t seed) : state_(seed) {}
  float Next() {
    return static_cast<float>(static_cast<double>(SplitMix64(state_) >> 40) * 0x1p-23 - 1.0);
  }

 private:
  uint64_t state_;
};

}  // namespace

int64_t WeightElements(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  return count;
}

void ForEachWeight(
    DecoderWeights& w,
    const std::function<void(const std::string&, const std::vector<int64_t>&, WeightArray&)>& fn) {
  const DecoderConfig& c = w.config;
  const bool gpt2 = c.kind == DecoderKind::kGpt2;
  const int64_t W = c.width, D = c.head_dim(), H = c.num_heads, KH = c.num_kv_heads,
                F = c.mlp_hidden;
  fn("token_embedding", {c.vocab_size, W}, w.token_embedding);
  if (gpt2) fn("position_embedding", {c.context_length, W}, w.position_embedding);
  w.layers.resize(c.num_layers);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    LayerWeights& L = w.layers[l];
    const std::string p = absl::StrCat("layers.", l, ".");
    fn(p + "attn_norm.weight", {W}, L.attn_norm_weight);
    if (gpt2) fn(p + "attn_norm.bias", {W}, L.attn_norm_bias);
    fn(p + "wq", {H * D, W}, L.wq);
    fn(p + "wk", {KH * D, W}, L.wk);
    fn(p + "wv", {KH * D, W}, L.wv);
    if (gpt2) {
      fn(p + "bq", {H * D}, L.bq);
      fn(p + "bk", {KH * D}, L.bk);
      fn(p + "bv", {KH * D}, L.bv);
    }
    fn(p + "wo", {W, H * D}, L.wo);
    if (gpt2) fn(p + "bo", {W}, L.bo);
    fn(p + "mlp_norm.weight", {W}, L.mlp_norm_weight);
    if (gpt2) fn(p + "mlp_norm.bias", {W}, L.mlp_norm_bias);
    fn(p + "w_up", {F, W}, L.w_up);
    if (gpt2) fn(p + "b_up", {F}, L.b_up);
    if (!gpt2) fn(p + "w_gate", {F, W}, L.w_gate);
    fn(p + "w_down", {W, F}, L.w_down);
    if (gpt2) fn(p + "b_down", {W}, L.b_down);
  }
  fn("final_norm.weight", {W}, w.final_norm_weight);
  if (gpt2) fn("final_norm.bias", {W}, w.final_norm_bias);
}

bool operator==(const WeightArray& a, const WeightArray& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

absl::Status AllocateWeights(DecoderWeights& weights) {
  KV_RETURN_IF_ERROR(ValidateDecoderConfig(weights.config));
  // Built aside and moved in at the end, so that a failure leaves `weights` as it was (the
  // views point into the arena, not into the struct: moving keeps them valid).
  DecoderWeights fresh;
  fresh.config = weights.config;
  // The tensors in the order a decode step reads them: ForEachWeight's, with the token
  // embedding (read last, as the output head; the step's one embedding row is negligible)
  // moved to the end.
  struct Place {
    WeightArray* array;
    int64_t size;
  };
  std::vector<Place> places;
  ForEachWeight(fresh,
                [&](const std::string&, const std::vector<int64_t>& shape, WeightArray& array) {
                  places.push_back({&array, WeightElements(shape)});
                });
  std::stable_partition(places.begin(), places.end(),
                        [&](const Place& p) { return p.array != &fresh.token_embedding; });
  // Each tensor starts on a 64-byte boundary (16 floats): aligned vector loads, and no cache
  // line shared by two tensors. A valid config's sizes can still sum past int64_t (4096
  // layers of 2^24-wide matrices), hence the checked sums.
  constexpr int64_t kAlignFloats = 16;
  auto padded = [](int64_t n) { return (n + kAlignFloats - 1) / kAlignFloats * kAlignFloats; };
  std::optional<int64_t> total = 0;
  for (const Place& p : places) {
    if (total) total = CheckedAdd(*total, padded(p.size));
  }
  if (total) total = CheckedMul(*total, int64_t{sizeof(float)});
  if (!total) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "weights: the decoder's weights (", weights.config.ToString(), ") pass 2^63 bytes"));
  }
  const size_t bytes = static_cast<size_t>(*total);
  float* const data = static_cast<float*>(AllocateLargeAware(bytes));
  if (data == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("weights: cannot allocate ", bytes, " bytes for the decoder's weights"));
  }
  if (bytes > 0) std::memset(data, 0, bytes);
  fresh.arena = std::shared_ptr<float>(data, [bytes](float* p) { FreeLargeAware(p, bytes); });
  int64_t at = 0;
  for (const Place& p : places) {
    p.array->data_ = data + at;
    p.array->size_ = static_cast<size_t>(p.size);
    at += padded(p.size);
  }
  weights = std::move(fresh);
  return absl::OkStatus();
}

DecoderWeights::DecoderWeights(const DecoderWeights& other) : config(other.config) {
  if (other.arena == nullptr) return;  // nothing allocated: nothing to copy
  if (!AllocateWeights(*this).ok()) throw std::bad_alloc();
  std::vector<const WeightArray*> from;
  ForEachWeight(const_cast<DecoderWeights&>(other),  // only read
                [&](const std::string&, const std::vector<int64_t>&, WeightArray& array) {
                  from.push_back(&array);
                });
  size_t i = 0;
  ForEachWeight(*this, [&](const std::string&, const std::vector<int64_t>&, WeightArray& array) {
    std::copy(from[i]->begin(), from[i]->end(), array.begin());
    ++i;
  });
}

DecoderWeights& DecoderWeights::operator=(const DecoderWeights& other) {
  if (this != &other) *this = DecoderWeights(other);
  return *this;
}

absl::StatusOr<DecoderWeights> RandomWeights(const DecoderConfig& config, uint64_t seed) {
  KV_RETURN_IF_ERROR(ValidateDecoderConfig(config));
  DecoderWeights w;
  w.config = config;
  KV_RETURN_IF_ERROR(AllocateWeights(w));
  UniformStream stream(seed);
  const float matrix_scale = 0.02f * std::sqrt(3.0f);  // uniform with std 0.02
  ForEachWeight(w,
                [&](const std::string& name, const std::vector<int64_t>& shape, WeightArray& data) {
                  const bool norm_weight = name.find("norm.weight") != std::string::npos;
                  const bool vector = shape.size() == 1;
                  for (float& x : data) {
                    const float u = stream.Next();
                    x = norm_weight ? 1.0f + 0.1f * u : vector ? 0.02f * u : matrix_scale * u;
                  }
                });
  return w;
}

absl::Status SaveWeights(const DecoderWeights& weights, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  if (!out) return absl::NotFoundError(absl::StrCat("weights: cannot create ", path));
  auto put_u32 = [&](uint32_t v) { out.write(reinterpret_cast<const char*>(&v), 4); };
  out.write(kMagic, 8);
  const std::string text = ConfigText(weights.config);
  put_u32(static_cast<uint32_t>(text.size()));
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  DecoderWeights& w = const_cast<DecoderWeights&>(weights);  // ForEachWeight only reads here
  uint32_t count = 0;
  ForEachWeight(w, [&](const std::string&, const std::vector<int64_t>&, WeightArray&) { ++count; });
  put_u32(count);
  ForEachWeight(w,
                [&](const std::string& name, const std::vector<int64_t>& shape, WeightArray& data) {
                  put_u32(static_cast<uint32_t>(name.size()));
                  out.write(name.data(), static_cast<std::streamsize>(name.size()));
                  put_u32(static_cast<uint32_t>(shape.size()));
                  for (int64_t d : shape) out.write(reinterpret_cast<const char*>(&d), 8);
                  out.write(reinterpret_cast<const char*>(data.data()),
                            static_cast<std::streamsize>(data.size() * sizeof(float)));
                });
  if (!out.good()) return absl::DataLossError(absl::StrCat("weights: write to ", path, " failed"));
  return absl::OkStatus();
}

namespace {

// The bytes of all of a config's tensors' values (no padding), or nullopt past 2^63.
std::optional<int64_t> ValueBytes(const DecoderConfig& config) {
  DecoderWeights shapes;  // no arena: ForEachWeight only names the tensors and shapes
  shapes.config = config;
  std::optional<int64_t> total = 0;
  ForEachWeight(shapes, [&](const std::string&, const std::vector<int64_t>& shape, WeightArray&) {
    if (total) total = CheckedAdd(*total, WeightElements(shape));
  });
  if (total) total = CheckedMul(*total, int64_t{sizeof(float)});
  return total;
}

}  // namespace

absl::StatusOr<DecoderWeights> LoadWeights(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("weights: cannot open ", path));
  auto read = [&](void* p, size_t n) {
    in.read(static_cast<char*>(p), static_cast<std::streamsize>(n));
    return in.good();
  };
  char magic[8];
  uint32_t text_size = 0;
  if (!read(magic, 8) || std::memcmp(magic, kMagic, 8) != 0 || !read(&text_size, 4) ||
      text_size > (1u << 16)) {
    return absl::InvalidArgumentError(
        absl::StrCat("weights: ", path, " is not a kvcheck weight file"));
  }
  std::string text(text_size, '\0');
  if (!read(text.data(), text_size)) return absl::DataLossError("weights: truncated config");
  DecoderWeights w;
  KV_ASSIGN_OR_RETURN(w.config, ParseConfig(text));
  // A file shorter than the config's values is truncated (or hostile): said before the arena
  // is allocated and zeroed, which for a large config could take all the machine's memory.
  const std::streampos values_start = in.tellg();
  in.seekg(0, std::ios::end);
  const int64_t rest = static_cast<int64_t>(in.tellg() - values_start);
  in.seekg(values_start);
  const std::optional<int64_t> value_bytes = ValueBytes(w.config);
  if (!in.good() || !value_bytes || rest < *value_bytes) {
    return absl::DataLossError(
        absl::StrCat("weights: ", path, " is truncated: ", rest,
                     " bytes after the config, its tensors' values need ",
                     value_bytes ? absl::StrCat(*value_bytes) : std::string("more than 2^63")));
  }
  KV_RETURN_IF_ERROR(AllocateWeights(w));
  uint32_t count = 0;
  if (!read(&count, 4)) return absl::DataLossError("weights: truncated tensor count");
  absl::Status status;
  uint32_t seen = 0;
  ForEachWeight(w,
                [&](const std::string& name, const std::vector<int64_t>& shape, WeightArray& data) {
                  if (!status.ok()) return;
                  ++seen;
                  uint32_t name_size = 0, rank = 0;
                  std::string file_name;
                  if (!read(&name_size, 4) || name_size > 4096) {
                    status = absl::DataLossError(absl::StrCat("weights: truncated before ", name));
                    return;
                  }
                  file_name.resize(name_size);
                  std::vector<int64_t> file_shape;
                  if (!read(file_name.data(), name_size) || !read(&rank, 4) || rank > 8) {
                    status = absl::DataLossError(absl::StrCat("weights: truncated before ", name));
                    return;
                  }
                  file_shape.resize(rank);
                  if (rank > 0 && !read(file_shape.data(), 8 * rank)) {
                    status = absl::DataLossError(absl::StrCat("weights: truncated in ", name));
                    return;
                  }
                  if (file_name != name || file_shape != shape) {
                    status = absl::InvalidArgumentError(
                        absl::StrCat("weights: expected tensor ", name, ", found ", file_name));
                    return;
                  }
                  if (!read(data.data(), data.size() * sizeof(float))) {
                    status = absl::DataLossError(absl::StrCat("weights: truncated data of ", name));
                  }
                });
  KV_RETURN_IF_ERROR(status);
  if (seen != count) {
    return absl::InvalidArgumentError(
        absl::StrCat("weights: file has ", count, " tensors, the config needs ", seen));
  }
  return w;
}

}  // namespace kvcheck::model
