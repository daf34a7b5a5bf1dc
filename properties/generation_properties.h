// File: generation_properties.h
// Generation laws (from the KV-cache chapter of "Build a Large Language Model (From Scratch)"),
// on generated small gpt2 / llama decoders with untrained weights:
//   - generation/<strategy>: cached greedy generation == full recomputation (windowed
//     strategies: recomputation over the same window), for every kernel: same tokens, and the
//     logits of every step within the logit tolerance;
//   - generation/chunked_prefill: a prompt fed in several chunks, then decoded, == one-shot
//     prefill (tokens, and logits within the tolerance);
//   - generation/reset_between_generations: a second generation after Reset is bitwise the
//     generation of a fresh generator;
//   - generation/batched_rows: several sequences decoded together, each a batch row of the
//     layer caches (rows that start and stop at different calls where the strategy's rows
//     advance independently, and forks of every cache): each row's logits after every call
//     within the logit tolerance of that row recomputed alone;
//   - generation/engine_vs_reference: the engine's logits (full recomputation, both matmul
//     paths) against the 50-digit reference decoder, within the tolerance;
//   - generation/windowed_cache_vs_reference: a generation through a windowed cache against
//     the reference decoder over the tokens it fed, each layer's window (the stricter of the
//     model's and the cache's) written out in the law, not taken from the engine.
//
// Logit tolerance: |engine - exact| <= 1e-3 * (1 + max_v |exact logit_v|) per step. This is
// an engineering tolerance, not a derived bound (the attention bound of reference/ does not
// extend through norms and MLPs here); the f32 engine is observed at ~1e-6 of it
// (engine_vs_reference prints the largest ratio), the decoder defects at > 1. Where the
// top two logits of the recomputation are within twice the tolerance (a near tie), the tokens
// may legitimately differ: the comparison of that case stops at that step.
#ifndef KVCHECK_PROPERTIES_GENERATION_PROPERTIES_H_
#define KVCHECK_PROPERTIES_GENERATION_PROPERTIES_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "properties/law_margins.h"
#include "properties/property_runner.h"
#include "properties/subject.h"
#include "src/cache/registry.h"
#include "src/model/generator.h"

namespace kvcheck::properties {

// Builds the generation loop under test (model::Generator::Create, or a defect's).
using GeneratorFactory = std::function<absl::StatusOr<std::unique_ptr<model::Generator>>(
    const model::Decoder* decoder, model::GenerationOptions options)>;

GeneratorFactory CorrectGenerator();

// The decoders run the subject's kernels when they implement what a decoder needs (causal,
// windows, positions, GQA), else the built-in ones; the laws draw the subject's strategies.
// REQUIRES: `strategy` and `subject` outlive the properties.
// The laws that compare logits with a tolerance record their margins (largest error /
// tolerance of a case, law_margins.h) into *margins when it is not null.
PropertySpec GenerationEquivalenceProperty(const CacheStrategy& strategy, GeneratorFactory factory,
                                           int cases, const std::string& name = "",
                                           const Subject& subject = BuiltinSubject(),
                                           LawMarginMap* margins = nullptr);
PropertySpec ChunkedPrefillProperty(int cases, const Subject& subject = BuiltinSubject());
PropertySpec ResetBetweenGenerationsProperty(GeneratorFactory factory, int cases,
                                             const std::string& name = "",
                                             const Subject& subject = BuiltinSubject());
PropertySpec EngineVsReferenceProperty(int cases, LawMarginMap* margins = nullptr);
// generation/batched_rows (batched_generation_property.cc).
PropertySpec BatchedRowsProperty(int cases, const Subject& subject = BuiltinSubject(),
                                 LawMarginMap* margins = nullptr);

// All of the above for every strategy of the subject that takes f32, with the correct
// generator (engine_vs_reference for the built-in engine only: it checks the decoders).
std::vector<PropertySpec> GenerationProperties(const Subject& subject = BuiltinSubject(),
                                               LawMarginMap* margins = nullptr);

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_GENERATION_PROPERTIES_H_
