#include "src/model/generator.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "src/base/split_mix.h"
#include "src/base/status_macros.h"

namespace kvcheck::model {
namespace {

bool IsNone(const std::string& strategy) { return strategy == "none" || strategy.empty(); }

}  // namespace

std::vector<int64_t> EffectiveLayerWindows(const DecoderConfig& config,
                                           const GenerationOptions& options) {
  std::vector<int64_t> windows(config.num_layers);
  for (int64_t l = 0; l < config.num_layers; ++l) {
    const int64_t own = config.layer_window(l);
    const int64_t imposed = options.cache_window;
    windows[l] = own == 0 ? imposed : imposed == 0 ? own : std::min(own, imposed);
  }
  return windows;
}

absl::StatusOr<std::vector<std::unique_ptr<KvCache>>> MakeLayerCaches(
    const DecoderConfig& config, const GenerationOptions& options) {
  std::vector<std::unique_ptr<KvCache>> caches;
  if (options.strategy == nullptr && IsNone(options.cache_strategy)) return caches;
  const CacheStrategy* strategy =
      options.strategy != nullptr ? options.strategy : FindCacheStrategy(options.cache_strategy);
  if (strategy == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("generator: no cache strategy '", options.cache_strategy, "'"));
  }
  if (strategy->windowed && options.cache_window <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("generator: strategy ", strategy->name, " needs cache_window > 0"));
  }
  const std::vector<int64_t> windows = EffectiveLayerWindows(config, options);
  for (int64_t l = 0; l < config.num_layers; ++l) {
    const CacheStrategy* layer_strategy = strategy;
    CacheConfig cache_config = strategy->default_config;
    if (options.initial_capacity > 0) cache_config.initial_capacity = options.initial_capacity;
    if (windows[l] > 0 && !strategy->windowed) {
      layer_strategy = FindCacheStrategy("ring");  // a windowed layer under a full strategy
      cache_config = layer_strategy->default_config;
    }
    cache_config.window = windows[l];
    cache_config.num_threads = options.num_threads;
    KV_ASSIGN_OR_RETURN(std::unique_ptr<KvCache> cache, layer_strategy->create(cache_config));
    caches.push_back(std::move(cache));
  }
  return caches;
}

int32_t ChooseToken(absl::Span<const float> logits, float temperature, uint64_t& random) {
  // The first index of the largest logit (a NaN never wins, nor does anything after a NaN at
  // 0). The best value is kept in a local: reloading logits[best] made each compare wait on the
  // index the previous one chose (1.2% of a decode step in perf, one thread, 50257 logits).
  int32_t best = 0;
  float best_value = logits[0];
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > best_value) {
      best = static_cast<int32_t>(i);
      best_value = logits[i];
    }
  }
  if (temperature <= 0) return best;
  // Sample from softmax(logits / T): inverse CDF on a 53-bit uniform.
  const double max = logits[best];
  double total = 0;
  for (float l : logits) total += std::exp((l - max) / temperature);
  const double u = static_cast<double>(SplitMix64(random) >> 11) * 0x1p-53 * total;
  double acc = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    acc += std::exp((logits[i] - max) / temperature);
    if (u < acc) return static_cast<int32_t>(i);
  }
  return best;
}

absl::StatusOr<std::unique_ptr<Generator>> Generator::Create(const Decoder* decoder,
                                                             GenerationOptions options) {
  std::unique_ptr<Generator> g(new Generator(decoder, std::move(options)));
  KV_RETURN_IF_ERROR(g->Init());
  return g;
}

absl::Status Generator::Init() {
  forward_.kernel = options_.kernel != nullptr ? options_.kernel
                                               : FindAttentionKernel(options_.attention_kernel);
  if (forward_.kernel == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("generator: no attention kernel '", options_.attention_kernel, "'"));
  }
  forward_.num_threads = options_.num_threads;
  forward_.matmul = options_.matmul;
  forward_.layer_windows = EffectiveLayerWindows(decoder_->config(), options_);
  KV_ASSIGN_OR_RETURN(caches_, MakeLayerCaches(decoder_->config(), options_));
  for (const auto& cache : caches_) cache_pointers_.push_back(cache.get());
  random_ = options_.sampling_seed;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<float>> Generator::Feed(absl::Span<const int32_t> tokens) {
  SetBlasThreads(options_.num_threads);
  if (caches_.empty()) {
    // Recompute the whole history, positions from 0.
    std::vector<int32_t> all = history_;
    all.insert(all.end(), tokens.begin(), tokens.end());
    KV_ASSIGN_OR_RETURN(std::vector<float> logits, decoder_->Forward(all, {0, 0}, {}, forward_));
    history_ = std::move(all);
    position_ += static_cast<int64_t>(tokens.size());
    return logits;
  }
  KV_ASSIGN_OR_RETURN(std::vector<float> logits,
                      decoder_->Forward(tokens, ChunkPositions(), cache_pointers_, forward_));
  position_ += static_cast<int64_t>(tokens.size());
  return logits;
}

absl::StatusOr<Generation> Generator::Generate(absl::Span<const int32_t> prompt, int64_t new_tokens,
                                               bool keep_logits) {
  Reset();
  return RunLoop(prompt, new_tokens, keep_logits);
}

absl::StatusOr<Generation> Generator::RunLoop(absl::Span<const int32_t> prompt, int64_t new_tokens,
                                              bool keep_logits) {
  if (new_tokens <= 0) return Generation();
  KV_ASSIGN_OR_RETURN(std::vector<float> logits, Feed(prompt));
  return Continue(std::move(logits), new_tokens, keep_logits);
}

absl::StatusOr<Generation> Generator::Continue(std::vector<float> logits, int64_t new_tokens,
                                               bool keep_logits) {
  Generation result;
  if (new_tokens <= 0) return result;
  while (true) {
    const int32_t token = Choose(logits);
    result.tokens.push_back(token);
    if (keep_logits) result.logits.push_back(logits);
    if (static_cast<int64_t>(result.tokens.size()) == new_tokens) break;
    KV_ASSIGN_OR_RETURN(logits, Feed({&token, 1}));
  }
  return result;
}

void Generator::Reset() {
  for (const auto& cache : caches_) cache->Reset();
  history_.clear();
  position_ = 0;
  random_ = options_.sampling_seed;
}

}  // namespace kvcheck::model
