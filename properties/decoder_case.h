// File: decoder_case.h
// What the generation laws draw and share: a small gpt2 / llama decoder with untrained
// weights (and gains that make its attention and MLP non-trivial), a prompt and a generation
// length, the kernel and the cache strategy it runs on, and the logit tolerance of the laws
// that compare one engine path with another.
#ifndef KVCHECK_PROPERTIES_DECODER_CASE_H_
#define KVCHECK_PROPERTIES_DECODER_CASE_H_

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "properties/subject.h"
#include "rapidcheck.h"
#include "src/attention/kernel_registry.h"
#include "src/cache/registry.h"
#include "src/model/decoder.h"
#include "src/model/generator.h"

namespace kvcheck::properties {

// Logit tolerance of the engine-against-engine laws: |actual - expected| <= this x (1 +
// max_v |expected logit_v|) per step (generation_properties.h says why).
inline constexpr double kRelativeLogitTolerance = 1e-3;

struct DecoderCase {
  model::DecoderConfig config;
  uint64_t weight_seed = 0;
  std::vector<int32_t> prompt;
  int64_t new_tokens = 1;
  std::string kernel;
  const AttentionKernel* kernel_ptr = nullptr;
  int64_t cache_window = 0;
  // wq and wk multiplied by this after RandomWeights: with GPT-2's initialisation alone
  // (std 0.02) the scores are so small that every row's softmax is nearly uniform, and a
  // wrong position (RoPE's angles, a key's slot) barely moves a logit; larger gains make
  // the attention peak on a few keys.
  float attention_gain = 1.0f;
  // The MLP's input weights (w_up, w_gate) and w_down multiplied by this: at std 0.02 the
  // activations see pre-activations of a few hundredths, where GELU and SiLU are nearly
  // linear (a GELU of the wrong formula, or SwiGLU with gate and up swapped, moves a logit
  // less than the tolerance); larger gains reach the curved part.
  float mlp_gain = 1.0f;
  // Greedy (0) or seeded sampling: the laws compare generators that must draw the same
  // tokens from the same logits, and a Reset must restart the draws from the seed.
  float temperature = 0.0f;
  uint64_t sampling_seed = 0;
};

void showValue(const DecoderCase& c, std::ostream& os);

// The kernels the decoders run on: the subject's kernels that implement what a decoder
// needs (causal, windows, a ring cache's positions, GQA), else the built-in ones (the laws
// then check the subject's caches).
std::vector<const AttentionKernel*> DecoderKernels(const Subject& subject);

// A decoder case; `windowed_strategy`: draw a cache window too; `sampling`: sometimes a
// temperature and a sampling seed (else greedy).
rc::Gen<DecoderCase> GenDecoderCase(bool windowed_strategy,
                                    const std::vector<const AttentionKernel*>& kernels,
                                    bool sampling = true);

// The case's decoder (fails the case if it cannot be built).
std::unique_ptr<model::Decoder> MakeDecoder(const DecoderCase& c);

// The strategy a law runs on, labelled in counterexamples.
struct StrategyChoice {
  const CacheStrategy* strategy;
};

void showValue(const StrategyChoice& c, std::ostream& os);
rc::Gen<StrategyChoice> GenStrategy(const std::vector<const CacheStrategy*>& strategies);

// The subject's strategies that a generator can use (those that take f32).
std::vector<const CacheStrategy*> DecoderStrategies(const Subject& subject);

// The generation options of case `c` on `strategy` (null: no cache, full recomputation).
model::GenerationOptions Options(const DecoderCase& c, const CacheStrategy* strategy);

// kRelativeLogitTolerance x (1 + max |exact|).
double Tolerance(absl::Span<const float> exact);
// The gap between the two largest logits.
double TopGap(absl::Span<const float> logits);

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_DECODER_CASE_H_
