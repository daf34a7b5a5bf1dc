#include "properties/generation_properties.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "properties/case_isolation.h"
#include "properties/decoder_case.h"
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

// The built-in f32 decoder against the 50-digit reference decoder: |error| <= this x (1 +
// max |exact logit|) of the position. Measured, not derived: the worst ratio in 600 cases
// (KVCHECK_CASE_SCALE=3, attention and MLP gains up to 16 and 32, both matmul paths, Zen 2,
// 2026-12-05) was 8.2e-7, so this leaves 25x. At the 1e-3 that engine-against-engine laws
// use, a GELU of the wrong formula or a LayerNorm off by a few percent passed.
constexpr double kReferenceLogitTolerance = 2e-5;


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


Generation Run(const GeneratorFactory& factory, const Decoder& decoder, GenerationOptions o,
               const DecoderCase& c) {
  absl::StatusOr<std::unique_ptr<model::Generator>> g = factory(&decoder, o);
  if (!g.ok()) RC_FAIL(absl::StrCat("generator: ", g.status().ToString()));
  absl::StatusOr<Generation> out = (*g)->Generate(c.prompt, c.new_tokens, true);
  if (!out.ok()) RC_FAIL(absl::StrCat("generation failed: ", out.status().ToString()));
  return *std::move(out);
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
  specs.push_back(BatchedRowsProperty(150, subject, margins));
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
