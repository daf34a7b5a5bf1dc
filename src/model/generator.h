// File: generator.h
// Generator: the generation loop of the KV-cache chapter of "Build a Large Language Model (From
// Scratch)" around a Decoder.
//   - Feed(tokens) runs a chunk (the prompt, part of it, or one new token) at the position
//     pointer and advances the pointer by the number of tokens fed;
//   - with a cache strategy, each layer keeps a KvCache and only the new tokens are run; with
//     "none", Feed recomputes the whole history every time (the uncached baseline);
//   - Generate(prompt, n) = Reset, prefill the prompt, then feed back one chosen token per step;
//   - greedy choice (temperature 0) or seeded sampling.
//
// Windows: a llama config's windowed layers attend to their last sliding_window positions; a
// windowed strategy (ring, scattered) with cache_window W restricts every layer to W. Each layer
// attends over the smaller of the two; a windowed layer under a full strategy gets a ring cache.
// Recomputation ("none") with the same cache_window attends over the same windows, which is
// what a windowed strategy is compared with.
#ifndef KVCHECK_SRC_MODEL_GENERATOR_H_
#define KVCHECK_SRC_MODEL_GENERATOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "src/attention/kernel_registry.h"
#include "src/cache/kv_cache.h"
#include "src/cache/registry.h"
#include "src/model/decoder.h"

namespace kvcheck::model {

struct GenerationOptions {
  std::string cache_strategy = "prealloc";  // a registry name, or "none"
  int64_t cache_window = 0;                 // window of windowed strategies (> 0 required there)
  int64_t initial_capacity = 0;             // preallocating strategies; 0: the registry default
  std::string attention_kernel = "flash";
  // When set, used instead of the registry names above (an external engine's strategy or
  // kernel, src/engine/). REQUIRES: they outlive the generator.
  const CacheStrategy* strategy = nullptr;
  const AttentionKernel* kernel = nullptr;
  int num_threads = 1;  // attention threads and OpenBLAS threads
  MatmulPath matmul = MatmulPath::kOptimized;
  float temperature = 0.0f;  // 0: greedy (ties go to the lowest token id)
  uint64_t sampling_seed = 0;
};

struct Generation {
  std::vector<int32_t> tokens;             // the new tokens
  std::vector<std::vector<float>> logits;  // the logits each token was chosen from (optional)
};

// The window each layer attends over under `options` (see above).
std::vector<int64_t> EffectiveLayerWindows(const DecoderConfig& config,
                                           const GenerationOptions& options);

// One cache per layer for `options` (empty for "none").
// Errors: kNotFound for an unknown strategy, kInvalidArgument for a windowed strategy without
// cache_window, and those of the strategies' factories.
absl::StatusOr<std::vector<std::unique_ptr<KvCache>>> MakeLayerCaches(
    const DecoderConfig& config, const GenerationOptions& options);

// The token chosen from `logits`: argmax (lowest id on ties) when temperature is 0, else a
// sample of softmax(logits / temperature) drawn with `random` (advanced).
int32_t ChooseToken(absl::Span<const float> logits, float temperature, uint64_t& random);

// The loop is virtual so that the defect catalogue can register faulty variants of it
// (defects/defective_generator.h); the engine's own loop is this class.
class Generator {
 public:
  // Errors: kNotFound for an unknown kernel; those of MakeLayerCaches.
  static absl::StatusOr<std::unique_ptr<Generator>> Create(const Decoder* decoder,
                                                           GenerationOptions options);
  virtual ~Generator() = default;

  // Runs `tokens` at the position pointer and returns the logits of the last one.
  // Errors: those of Decoder::Forward; on error the position pointer does not move.
  virtual absl::StatusOr<std::vector<float>> Feed(absl::Span<const int32_t> tokens);

  // Reset, prefill `prompt`, then `new_tokens` steps (feeding each chosen token back).
  virtual absl::StatusOr<Generation> Generate(absl::Span<const int32_t> prompt, int64_t new_tokens,
                                              bool keep_logits = false);

  // The decode loop after a prefill: chooses a token from `logits` (those of the last token
  // fed), feeds it back, and so on until `new_tokens` are chosen.
  absl::StatusOr<Generation> Continue(std::vector<float> logits, int64_t new_tokens,
                                      bool keep_logits = false);

  // Forgets the sequence: position 0, caches reset, sampling restarted from the seed.
  virtual void Reset();

  int32_t Choose(absl::Span<const float> logits) {
    return ChooseToken(logits, options_.temperature, random_);
  }
  int64_t position() const { return position_; }
  const GenerationOptions& options() const { return options_; }

 protected:
  Generator(const Decoder* decoder, GenerationOptions options)
      : decoder_(decoder), options_(std::move(options)) {}
  // Resolves the kernel and builds the caches (the second half of Create).
  absl::Status Init();
  // The prefill-and-decode loop of Generate, without the Reset.
  absl::StatusOr<Generation> RunLoop(absl::Span<const int32_t> prompt, int64_t new_tokens,
                                     bool keep_logits);
  // The positions a cached Feed gives its chunk: the position pointer for both the embeddings
  // and the mask. (The decoder defects of the catalogue override this.)
  virtual ForwardPositions ChunkPositions() const { return {position_, position_}; }

  const Decoder* decoder_;
  GenerationOptions options_;
  ForwardOptions forward_;
  std::vector<std::unique_ptr<KvCache>> caches_;
  std::vector<KvCache*> cache_pointers_;
  std::vector<int32_t> history_;  // "none": every token since the reset
  int64_t position_ = 0;
  uint64_t random_ = 0;
};

}  // namespace kvcheck::model

#endif  // KVCHECK_SRC_MODEL_GENERATOR_H_
