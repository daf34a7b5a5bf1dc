// File: defect_registry.h
// The defect catalogue: faithful models of real KV-cache and attention defects, each a
// registered variant of a strategy or kernel (the same CacheStrategy / kernel interfaces as
// the correct ones, in a separate table), with where it comes from, what goes wrong, and which
// property (or fuzzer) is expected to catch it. defects_killed_test proves that each is caught.
#ifndef KVCHECK_DEFECTS_DEFECT_REGISTRY_H_
#define KVCHECK_DEFECTS_DEFECT_REGISTRY_H_

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "src/attention/attention_params.h"
#include "src/cache/registry.h"
#include "src/model/generator.h"
#include "src/tensor/tensor.h"

namespace kvcheck::defects {

enum class DefectKind {
  kCache,      // a KvCache strategy: `strategy` is set
  kAttention,  // an attention kernel: `kernel` is set
  kDecoder,    // a generation-loop defect: `generator` is set
};

// What kills the defect (see defects_killed_test.cc).
enum class Killer {
  kCacheStateMachine,  // cache/<defect>/<dtype> state machine
  kGrowthLaw,          // cache/<defect>/growth_law
  kKernelLaws,         // attention kernel vs the reference on generated cases
  kPrecisionEnvelope,  // attention kernel vs the straightforward f32 baseline's precision
  kMetalKernelLaws,    // a Metal kernel vs the reference on the emulator's budget of cases
  kGenerationLaws,     // generation/<defect> (cached == recomputation, or reset law)
  kPending,            // not implemented yet
};

struct Defect {
  const char* name;
  // Where the defect comes from: candle 0.11, the KV-cache chapter of "Build a Large Language
  // Model (From Scratch)", or an upstream issue / PR.
  const char* origin;
  const char* description;   // what goes wrong
  DefectKind kind;
  Killer killer;
  DType dtype;               // the dtype the kill runs in (half-precision defects need one)
  CacheStrategy strategy;    // kCache
  absl::StatusOr<Tensor> (*kernel)(const Tensor& q, const Tensor& k, const Tensor& v,
                                   const AttentionParams& params);  // kAttention
  absl::StatusOr<std::unique_ptr<model::Generator>> (*generator)(
      const model::Decoder* decoder, model::GenerationOptions options);  // kDecoder
};

absl::Span<const Defect> Defects();
const Defect* FindDefect(const std::string& name);

const char* KillerName(Killer killer);

}  // namespace kvcheck::defects

#endif  // KVCHECK_DEFECTS_DEFECT_REGISTRY_H_
