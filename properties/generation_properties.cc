#include "properties/generation_properties.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "properties/case_isolation.h"
#include "properties/generators.h"
#include "rapidcheck.h"
#include "reference/reference_decoder.h"
#include "reference/token_choice.h"
#include "src/attention/kernel_registry.h"

namespace kvcheck::properties {
namespace {

using model::Decoder;
using model::DecoderConfig;
using model::DecoderKind;
using model::Generation;
using model::GenerationOptions;

constexpr double kRelativeLogitTolerance = 1e-3;
// The built-in f32 decoder against the 50-digit reference decoder: |error| <= this x (1 +
// max |exact logit|) of the position. Measured, not derived: the worst ratio in 600 cases
// (KVCHECK_CASE_SCALE=3, attention and MLP gains up to 16 and 32, both matmul paths, Zen 2,
// 2026-12-05) was 8.2e-7, so this leaves 25x. At the 1e-3 that engine-against-engine laws
// use, a GELU of the wrong formula or a LayerNorm off by a few percent passed.
constexpr double kReferenceLogitTolerance = 2e-5;

struct DecoderCase {
  DecoderConfig config;
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

void showValue(const DecoderCase& c, std::ostream& os) {
  os << c.config.ToString() << ", weight seed " << c.weight_seed << ", prompt ["
     << absl::StrJoin(c.prompt, ",") << "], " << c.new_tokens << " new tokens, kernel " << c.kernel
     << ", cache window " << c.cache_window << ", attention gain " << c.attention_gain
     << ", MLP gain " << c.mlp_gain;
  if (c.temperature > 0) {
    os << ", temperature " << c.temperature << ", sampling seed " << c.sampling_seed;
  }
  if (c.config.kind == DecoderKind::kLlama) os << ", rope_theta " << c.config.rope_theta;
}

// The kernels the decoders run on: the subject's kernels that implement what a decoder
// needs (causal, windows, a ring cache's positions, GQA), else the built-in ones (the laws
// then check the subject's caches).
std::vector<const AttentionKernel*> DecoderKernels(const Subject& subject) {
  constexpr uint32_t kNeeded = kFeatureCausal | kFeatureWindow | kFeaturePositions | kFeatureGqa;
  std::vector<const AttentionKernel*> kernels;
  for (const AttentionKernel& kernel : subject.kernels) {
    if ((kernel.features & kNeeded) == kNeeded && kernel.supports(DType::kF32) &&
        !kernel.behind_dispatcher) {
      kernels.push_back(&kernel);
    }
  }
  if (kernels.empty()) {
    for (const AttentionKernel& kernel : AttentionKernels()) {
      if (!kernel.behind_dispatcher) kernels.push_back(&kernel);
    }
  }
  return kernels;
}

rc::Gen<DecoderCase> GenDecoderCase(bool windowed_strategy,
                                    const std::vector<const AttentionKernel*>& kernels) {
  return rc::gen::exec([windowed_strategy, kernels] {
    DecoderCase c;
    DecoderConfig& m = c.config;
    m.kind = *Uniform(0, 2) == 0 ? DecoderKind::kGpt2 : DecoderKind::kLlama;
    m.vocab_size = *Uniform<int64_t>(2, 48);
    m.context_length = 40;
    m.num_kv_heads = *Uniform<int64_t>(1, 3);
    m.num_heads =
        m.kind == DecoderKind::kGpt2 ? m.num_kv_heads : m.num_kv_heads * *Uniform<int64_t>(1, 4);
    m.width = m.num_heads * *Choice<int64_t>(2, 4, 6, 8);
    m.num_layers = *Uniform<int64_t>(1, 4);
    m.mlp_hidden = m.kind == DecoderKind::kGpt2 ? 4 * m.width : *Uniform<int64_t>(4, 49);
    if (m.kind == DecoderKind::kLlama && Sometimes(50)) {
      m.sliding_window = *Uniform<int64_t>(1, 8);
    }
    // Small bases turn every RoPE pair a visible angle per position within a short prompt.
    if (m.kind == DecoderKind::kLlama) m.rope_theta = *Choice(10000.0f, 100.0f, 10.0f);
    c.weight_seed = *rc::gen::arbitrary<uint64_t>();
    c.attention_gain = *Choice(1.0f, 4.0f, 16.0f);
    c.mlp_gain = *Choice(1.0f, 8.0f, 32.0f);
    if (Sometimes(30)) {
      c.temperature = *Choice(1.0f, 0.5f, 2.0f);
      c.sampling_seed = *rc::gen::arbitrary<uint64_t>();
    }
    c.prompt = *rc::gen::container<std::vector<int32_t>>(
        static_cast<size_t>(*Uniform(1, 10)),
        rc::gen::inRange<int32_t>(0, static_cast<int32_t>(m.vocab_size)));
    c.new_tokens = *Uniform<int64_t>(1, 20);
    // A generation feeds the prompt and every chosen token but the last: one case in four
    // fills the context exactly, so that its last position is used (the rest leave room).
    if (Sometimes(25)) {
      m.context_length = static_cast<int64_t>(c.prompt.size()) + c.new_tokens - 1;
    }
    c.kernel_ptr = kernels[*Uniform<size_t>(0, kernels.size())];
    // An emulated kernel (the Metal dispatcher: a thousand times slower per call) drives one
    // case in ten it is drawn for; the others go to a CPU kernel, so the law's time stays.
    if (c.kernel_ptr->emulated() && !Sometimes(10)) {
      std::vector<const AttentionKernel*> cpu;
      for (const AttentionKernel* kernel : kernels) {
        if (!kernel->emulated()) cpu.push_back(kernel);
      }
      if (!cpu.empty()) c.kernel_ptr = cpu[*Uniform<size_t>(0, cpu.size())];
    }
    c.kernel = c.kernel_ptr->name;
    if (windowed_strategy) c.cache_window = *Uniform<int64_t>(1, 10);
    return c;
  });
}

std::unique_ptr<Decoder> MakeDecoder(const DecoderCase& c) {
  absl::StatusOr<model::DecoderWeights> weights = model::RandomWeights(c.config, c.weight_seed);
  RC_ASSERT(weights.ok());
  model::ForEachWeight(*weights, [&](const std::string& name, const std::vector<int64_t>&,
                                     model::WeightArray& data) {
    const bool attention = name.ends_with(".wq") || name.ends_with(".wk");
    const bool mlp = name.ends_with(".w_up") || name.ends_with(".w_gate") ||
                     name.ends_with(".w_down");
    const float gain = attention ? c.attention_gain : mlp ? c.mlp_gain : 1.0f;
    if (gain == 1.0f) return;
    for (float& x : data) x *= gain;
  });
  absl::StatusOr<std::unique_ptr<Decoder>> decoder = Decoder::Create(*std::move(weights));
  RC_ASSERT(decoder.ok());
  return *std::move(decoder);
}

// Where the chunked-prefill law cuts the prompt, labelled in counterexamples.
struct ChunkCuts {
  std::vector<size_t> cuts;  // 0, the cut points, prompt length; sorted, distinct
};

void showValue(const ChunkCuts& c, std::ostream& os) {
  os << "prompt fed in chunks [" << absl::StrJoin(c.cuts, ", ") << "] (cut points, 0 and the "
     << "prompt length included)";
}

rc::Gen<ChunkCuts> GenChunkCuts(size_t prompt_length) {
  return rc::gen::exec([prompt_length] {
    ChunkCuts c{{0, prompt_length}};
    for (int n = *Uniform(1, 4); n > 0; --n) {
      c.cuts.push_back(*rc::gen::inRange<size_t>(1, prompt_length + 1));
    }
    std::sort(c.cuts.begin(), c.cuts.end());
    c.cuts.erase(std::unique(c.cuts.begin(), c.cuts.end()), c.cuts.end());
    return c;
  });
}

// The second generation of the reset law, labelled in counterexamples.
struct SecondGeneration {
  std::vector<int32_t> prompt;
  int64_t new_tokens = 1;
};

void showValue(const SecondGeneration& g, std::ostream& os) {
  os << "second generation: prompt [" << absl::StrJoin(g.prompt, ",") << "], " << g.new_tokens
     << " new tokens";
}

rc::Gen<SecondGeneration> GenSecondGeneration(int64_t vocab_size) {
  return rc::gen::exec([vocab_size] {
    SecondGeneration g;
    g.prompt = *rc::gen::container<std::vector<int32_t>>(
        static_cast<size_t>(*Uniform(1, 10)),
        rc::gen::inRange<int32_t>(0, static_cast<int32_t>(vocab_size)));
    g.new_tokens = *Uniform<int64_t>(1, 12);
    return g;
  });
}

// The strategy a law runs on, labelled in counterexamples.
struct StrategyChoice {
  const CacheStrategy* strategy;
};

void showValue(const StrategyChoice& c, std::ostream& os) {
  os << "cache strategy " << c.strategy->name;
}

rc::Gen<StrategyChoice> GenStrategy(const std::vector<const CacheStrategy*>& strategies) {
  return rc::gen::map(Uniform<size_t>(0, strategies.size()), [strategies](size_t i) {
    return StrategyChoice{strategies[i]};
  });
}

// The subject's strategies that a generator can use (a decoder resets its caches).
std::vector<const CacheStrategy*> DecoderStrategies(const Subject& subject) {
  std::vector<const CacheStrategy*> strategies;
  for (const CacheStrategy& strategy : subject.strategies) {
    if (strategy.supports(DType::kF32)) strategies.push_back(&strategy);
  }
  return strategies;
}

// `strategy` null: no cache (full recomputation).
GenerationOptions Options(const DecoderCase& c, const CacheStrategy* strategy) {
  GenerationOptions o;
  o.cache_strategy = strategy == nullptr ? "none" : strategy->name;
  o.strategy = strategy;
  o.cache_window = c.cache_window;
  o.attention_kernel = c.kernel;
  o.kernel = c.kernel_ptr;
  o.temperature = c.temperature;
  o.sampling_seed = c.sampling_seed;
  return o;
}

Generation Run(const GeneratorFactory& factory, const Decoder& decoder, GenerationOptions o,
               const DecoderCase& c) {
  absl::StatusOr<std::unique_ptr<model::Generator>> g = factory(&decoder, o);
  if (!g.ok()) RC_FAIL(absl::StrCat("generator: ", g.status().ToString()));
  absl::StatusOr<Generation> out = (*g)->Generate(c.prompt, c.new_tokens, true);
  if (!out.ok()) RC_FAIL(absl::StrCat("generation failed: ", out.status().ToString()));
  return *std::move(out);
}

double Tolerance(absl::Span<const float> exact) {
  double max_abs = 0;
  for (float x : exact) max_abs = std::max(max_abs, std::fabs(static_cast<double>(x)));
  return kRelativeLogitTolerance * (1 + max_abs);
}

// The gap between the two largest logits.
double TopGap(absl::Span<const float> logits) {
  double first = -INFINITY, second = -INFINITY;
  for (float x : logits) {
    if (x > first) {
      second = first;
      first = x;
    } else if (x > second) {
      second = x;
    }
  }
  return first - second;
}

// `actual` against `expected` (the recomputation): logits within the tolerance and the same
// tokens, up to the first near tie of `expected`. Returns the largest error / tolerance.
double CompareGenerations(const Generation& actual, const Generation& expected, const char* what) {
  RC_ASSERT(actual.tokens.size() == expected.tokens.size());
  double worst = 0;
  for (size_t t = 0; t < expected.tokens.size(); ++t) {
    const std::vector<float>& want = expected.logits[t];
    const std::vector<float>& got = actual.logits[t];
    const double tolerance = Tolerance(want);
    for (size_t v = 0; v < want.size(); ++v) {
      const double error = std::fabs(double{got[v]} - want[v]);
      worst = std::max(worst, error / tolerance);
      if (!(error <= tolerance)) {
        RC_FAIL(absl::StrCat(what, ": step ", t, " logit ", v, " is ", got[v], ", recomputation ",
                             want[v], " (tolerance ", tolerance, "); tokens so far [",
                             absl::StrJoin(actual.tokens.begin(), actual.tokens.begin() + t, ","),
                             "]"));
      }
    }
    if (TopGap(want) < 2 * tolerance) {
      RC_TAG("near tie: compared up to it");
      return worst;
    }
    if (got.size() != want.size() || actual.tokens[t] != expected.tokens[t]) {
      RC_FAIL(absl::StrCat(what, ": step ", t, " chose token ", actual.tokens[t],
                           ", recomputation ", expected.tokens[t]));
    }
  }
  return worst;
}


}  // namespace

GeneratorFactory CorrectGenerator() {
  return [](const Decoder* decoder, GenerationOptions options) {
    return model::Generator::Create(decoder, std::move(options));
  };
}

PropertySpec GenerationEquivalenceProperty(const CacheStrategy& strategy, GeneratorFactory factory,
                                           int cases, const std::string& name,
                                           const Subject& subject, LawMarginMap* margins) {
  PropertySpec spec;
  spec.name = name.empty() ? absl::StrCat("generation/", strategy.name) : name;
  spec.default_cases = cases;
  spec.body = [&strategy, factory, kernels = DecoderKernels(subject), margins] {
    const DecoderCase c = *GenDecoderCase(strategy.windowed, kernels);
    MergeLawMargins(RunIsolatedWithPayload([&] {
                      const std::unique_ptr<Decoder> decoder = MakeDecoder(c);
                      const Generation expected =
                          Run(CorrectGenerator(), *decoder, Options(c, nullptr), c);
                      const Generation actual = Run(factory, *decoder, Options(c, &strategy), c);
                      return EncodeLawMargin(
                          "generation/cached logits vs recomputation / tolerance",
                          CompareGenerations(actual, expected, "cached vs recomputation"));
                    }),
                    margins);
    RC_TAG(model::DecoderKindName(c.config.kind), c.kernel);
    RC_CLASSIFY(c.config.sliding_window > 0, "windowed layers");
    RC_CLASSIFY(
        static_cast<int64_t>(c.prompt.size()) + c.new_tokens > c.cache_window && c.cache_window > 0,
        "sequence past the cache window");
  };
  return spec;
}

PropertySpec ChunkedPrefillProperty(int cases, const Subject& subject) {
  return {"generation/chunked_prefill", cases, [strategies = DecoderStrategies(subject),
                                                kernels = DecoderKernels(subject)] {
            const CacheStrategy& strategy = *(*GenStrategy(strategies)).strategy;
            const DecoderCase c = *GenDecoderCase(strategy.windowed, kernels);
            const std::vector<size_t> cuts = (*GenChunkCuts(c.prompt.size())).cuts;
            RunIsolated([&] {
              const std::unique_ptr<Decoder> decoder = MakeDecoder(c);
              const Generation one_shot =
                  Run(CorrectGenerator(), *decoder, Options(c, &strategy), c);
              // The same prompt in chunks, then the same decode loop.
              absl::StatusOr<std::unique_ptr<model::Generator>> g =
                  model::Generator::Create(decoder.get(), Options(c, &strategy));
              RC_ASSERT(g.ok());
              absl::StatusOr<std::vector<float>> logits;
              for (size_t i = 0; i + 1 < cuts.size(); ++i) {
                NoteStep(absl::StrCat("feeding prompt tokens [", cuts[i], ", ", cuts[i + 1], ")"));
                logits = (*g)->Feed(
                    absl::MakeConstSpan(c.prompt).subspan(cuts[i], cuts[i + 1] - cuts[i]));
                RC_ASSERT(logits.ok());
              }
              absl::StatusOr<Generation> chunked =
                  (*g)->Continue(*std::move(logits), c.new_tokens, /*keep_logits=*/true);
              if (!chunked.ok()) RC_FAIL(absl::StrCat("chunked: ", chunked.status().ToString()));
              CompareGenerations(*chunked, one_shot, "chunked vs one-shot prefill");
              // At the end of the context, one more token is refused and moves nothing.
              const int64_t at = (*g)->position();
              if (at == c.config.context_length) {
                const int32_t token = chunked->tokens.back();
                const absl::StatusOr<std::vector<float>> past = (*g)->Feed({&token, 1});
                if (past.status().code() != absl::StatusCode::kOutOfRange || (*g)->position() != at) {
                  RC_FAIL(absl::StrCat("a token past the context (", at, " positions): ",
                                       past.status().ToString(), ", position ", (*g)->position()));
                }
              }
            });
            RC_TAG(strategy.name, absl::StrCat(cuts.size() - 1, " chunks"));
            RC_CLASSIFY(static_cast<int64_t>(c.prompt.size()) + c.new_tokens - 1 ==
                            c.config.context_length,
                        "fills the context");
          }};
}

PropertySpec ResetBetweenGenerationsProperty(GeneratorFactory factory, int cases,
                                             const std::string& name, const Subject& subject) {
  return {
      name.empty() ? "generation/reset_between_generations" : name, cases,
      [factory, strategies = DecoderStrategies(subject), kernels = DecoderKernels(subject)] {
        const CacheStrategy& strategy = *(*GenStrategy(strategies)).strategy;
        DecoderCase first = *GenDecoderCase(strategy.windowed, kernels);
        const SecondGeneration again = *GenSecondGeneration(first.config.vocab_size);
        // One decoder runs both: its context holds the longer of the two.
        first.config.context_length = std::max(
            first.config.context_length,
            static_cast<int64_t>(again.prompt.size()) + again.new_tokens - 1);
        DecoderCase second = first;
        second.prompt = again.prompt;
        second.new_tokens = again.new_tokens;
        RunIsolated([&] {
          const std::unique_ptr<Decoder> decoder = MakeDecoder(first);
          absl::StatusOr<std::unique_ptr<model::Generator>> g =
              factory(decoder.get(), Options(first, &strategy));
          RC_ASSERT(g.ok());
          RC_ASSERT((*g)->Generate(first.prompt, first.new_tokens).ok());
          absl::StatusOr<Generation> again = (*g)->Generate(second.prompt, second.new_tokens, true);
          if (!again.ok()) RC_FAIL(absl::StrCat("second generation: ", again.status().ToString()));
          const Generation fresh =
              Run(CorrectGenerator(), *decoder, Options(second, &strategy), second);
          if (again->tokens != fresh.tokens || again->logits != fresh.logits) {
            RC_FAIL(absl::StrCat("after a first generation, ", strategy.name, " generated [",
                                 absl::StrJoin(again->tokens, ","), "]; a fresh generator [",
                                 absl::StrJoin(fresh.tokens, ","), "] (logits compared bitwise)"));
          }
        });
        RC_TAG(strategy.name);
      }};
}

// The window each layer attends over, written out here rather than read from the engine
// (model::EffectiveLayerWindows): llama's even layers have the model's sliding window, and a
// windowed cache imposes its own; the stricter of the two holds (0: none).
std::vector<int64_t> ExpectedLayerWindows(const DecoderConfig& config, int64_t cache_window) {
  std::vector<int64_t> windows;
  for (int64_t l = 0; l < config.num_layers; ++l) {
    int64_t window =
        config.kind == DecoderKind::kLlama && l % 2 == 0 ? config.sliding_window : 0;
    if (cache_window > 0 && (window == 0 || cache_window < window)) window = cache_window;
    windows.push_back(window);
  }
  return windows;
}

// `logits` (V values) of position `s` against row s of `exact` ([S, V]); returns the largest
// error / tolerance.
double CheckAgainstExact(absl::Span<const float> logits, const std::vector<double>& exact,
                         int64_t s, const std::string& what) {
  const int64_t V = static_cast<int64_t>(logits.size());
  double max_abs = 0;
  for (int64_t v = 0; v < V; ++v) max_abs = std::max(max_abs, std::fabs(exact[s * V + v]));
  const double tolerance = kReferenceLogitTolerance * (1 + max_abs);
  double worst = 0;
  for (int64_t v = 0; v < V; ++v) {
    const double error = std::fabs(logits[v] - exact[s * V + v]);
    worst = std::max(worst, error / tolerance);
    if (!(error <= tolerance)) {
      RC_FAIL(absl::StrCat(what, " position ", s, " logit ", v, ": ", logits[v], " vs exact ",
                           exact[s * V + v], " (tolerance ", tolerance, ")"));
    }
  }
  return worst;
}

constexpr char kReferenceMargin[] = "generation/logits vs reference decoder / tolerance";

// A generation through a windowed cache (ring, scattered) against the reference decoder
// over the tokens it fed, with the windows written out independently of the engine.
PropertySpec WindowedCacheVsReferenceProperty(int cases, LawMarginMap* margins) {
  std::vector<const CacheStrategy*> windowed;
  for (const CacheStrategy* strategy : DecoderStrategies(BuiltinSubject())) {
    if (strategy->windowed) windowed.push_back(strategy);
  }
  return {"generation/windowed_cache_vs_reference", cases,
          [windowed, kernels = DecoderKernels(BuiltinSubject()), margins] {
            const CacheStrategy& strategy = *(*GenStrategy(windowed)).strategy;
            const DecoderCase c = *GenDecoderCase(true, kernels);
            MergeLawMargins(RunIsolatedWithPayload([&] {
              const std::unique_ptr<Decoder> decoder = MakeDecoder(c);
              const Generation generation =
                  Run(CorrectGenerator(), *decoder, Options(c, &strategy), c);
              std::vector<int32_t> fed = c.prompt;
              fed.insert(fed.end(), generation.tokens.begin(), generation.tokens.end() - 1);
              const std::vector<double> exact = reference::ReferenceDecoderLogits(
                  decoder->weights(), fed, ExpectedLayerWindows(c.config, c.cache_window));
              const int64_t P = static_cast<int64_t>(c.prompt.size());
              double worst = 0;
              for (size_t t = 0; t < generation.logits.size(); ++t) {
                worst = std::max(
                    worst, CheckAgainstExact(generation.logits[t], exact,
                                             P - 1 + static_cast<int64_t>(t),
                                             absl::StrCat(strategy.name, " (window ",
                                                          c.cache_window, ") step ", t)));
              }
              return EncodeLawMargin(kReferenceMargin, worst);
            }),
                            margins);
            RC_TAG(strategy.name, model::DecoderKindName(c.config.kind));
            RC_CLASSIFY(c.config.sliding_window > 0 && c.config.sliding_window < c.cache_window,
                        "the model's window is the stricter");
            RC_CLASSIFY(c.config.sliding_window > c.cache_window, "the cache's window is the stricter");
          }};
}

PropertySpec EngineVsReferenceProperty(int cases, LawMarginMap* margins) {
  return {
      "generation/engine_vs_reference", cases,
      [kernels = DecoderKernels(BuiltinSubject()), margins] {
        const DecoderCase c = *GenDecoderCase(false, kernels);
        MergeLawMargins(RunIsolatedWithPayload([&] {
          const std::unique_ptr<Decoder> decoder = MakeDecoder(c);
          const std::vector<int64_t> windows = ExpectedLayerWindows(c.config, 0);
          const std::vector<double> exact =
              reference::ReferenceDecoderLogits(decoder->weights(), c.prompt, windows);
          const int64_t S = static_cast<int64_t>(c.prompt.size()), V = c.config.vocab_size;
          double worst = 0;
          for (model::MatmulPath path : {model::MatmulPath::kOptimized, model::MatmulPath::kPlain}) {
            model::ForwardOptions options;
            options.kernel = c.kernel_ptr;
            options.matmul = path;
            options.logits_rows = S;
            absl::StatusOr<std::vector<float>> logits =
                decoder->Forward(c.prompt, {0, 0}, {}, options);
            RC_ASSERT(logits.ok());
            for (int64_t s = 0; s < S; ++s) {
              worst = std::max(
                  worst, CheckAgainstExact(
                             absl::MakeConstSpan(*logits).subspan(s * V, V), exact, s,
                             path == model::MatmulPath::kOptimized ? "optimized" : "plain"));
            }
          }
          return EncodeLawMargin(kReferenceMargin, worst);
        }),
                        margins);
        RC_TAG(model::DecoderKindName(c.config.kind), c.kernel);
      }};
}

// ChooseToken against the exact choice (reference/token_choice.h): greedy with ties (logits
// drawn from a few values) and sampled, eight draws from one seed. Draws whose uniform lies
// within 1e-12 of a boundary of the exact CDF are not compared.
PropertySpec TokenChoiceProperty(int cases) {
  return {"generation/token_choice", cases, [] {
            const int64_t vocab = *Uniform<int64_t>(1, 40);
            const bool ties = Sometimes(50);
            std::vector<float> logits(vocab);
            for (float& l : logits) {
              l = ties ? static_cast<float>(*Uniform(-2, 3))
                       : static_cast<float>(*Uniform(-3000, 3001)) / 256.0f;
            }
            const float temperature = *Choice(0.0f, 1.0f, 0.25f, 4.0f);
            const uint64_t seed = *rc::gen::arbitrary<uint64_t>();
            uint64_t engine_random = seed, exact_random = seed;
            for (int draw = 0; draw < 8; ++draw) {
              const int32_t got = model::ChooseToken(logits, temperature, engine_random);
              const std::optional<int32_t> want =
                  reference::ReferenceTokenChoice(logits, temperature, exact_random);
              if (want.has_value() && got != *want) {
                RC_FAIL(absl::StrCat("draw ", draw, " at temperature ", temperature, " from [",
                                     absl::StrJoin(logits, ","), "], seed ", seed, ": token ",
                                     got, ", the exact choice ", *want));
              }
            }
            RC_TAG(temperature == 0 ? "greedy" : "sampled", ties ? "ties" : "spread");
          }};
}

std::vector<PropertySpec> GenerationProperties(const Subject& subject, LawMarginMap* margins) {
  std::vector<PropertySpec> specs;
  if (DecoderStrategies(subject).empty()) return specs;
  for (const CacheStrategy& strategy : subject.strategies) {
    if (!strategy.supports(DType::kF32)) continue;
    specs.push_back(
        GenerationEquivalenceProperty(strategy, CorrectGenerator(), 400, "", subject, margins));
  }
  specs.push_back(ChunkedPrefillProperty(400, subject));
  // The reset law needs strategies with Reset.
  bool resets = true;
  for (const CacheStrategy* strategy : DecoderStrategies(subject)) resets &= strategy->resets;
  if (resets) specs.push_back(ResetBetweenGenerationsProperty(CorrectGenerator(), 200, "", subject));
  if (subject.builtin) {
    specs.push_back(EngineVsReferenceProperty(200, margins));
    specs.push_back(WindowedCacheVsReferenceProperty(100, margins));
    specs.push_back(TokenChoiceProperty(300));
  }
  return specs;
}

}  // namespace kvcheck::properties
