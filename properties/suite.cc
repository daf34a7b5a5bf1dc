#include "properties/suite.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "properties/generation_properties.h"
#include "properties/metal_properties.h"
#include "properties/model_properties.h"
#include "properties/oracle_agreement.h"
#include "properties/step_properties.h"
#include "properties/tensor_properties.h"

namespace kvcheck::properties {
namespace {

// What a suite property exercises (PropertySpec::strategies, kernels, dtype), read from its
// name, which follows one scheme: "cache/<strategy>/<dtype or law>", "generation/<strategy>"
// or "generation/<law over every strategy>", "attention/<kernel>/<law>" (a kernel of its own)
// or "attention/<law over every kernel>". Properties that name their kernels themselves (the
// Metal ones) keep them; "tensor/", "reference/", "step/" and "model/" exercise none.
void FillScope(const Subject& subject, PropertySpec& spec) {
  const std::vector<std::string> parts = absl::StrSplit(spec.name, '/');
  std::vector<std::string> all_strategies, all_kernels;
  for (const CacheStrategy& s : subject.strategies) all_strategies.push_back(s.name);
  for (const AttentionKernel& k : subject.kernels) all_kernels.push_back(k.name);
  const auto is_strategy = [&](const std::string& name) {
    return std::find(all_strategies.begin(), all_strategies.end(), name) != all_strategies.end();
  };
  if (parts[0] == "cache" && parts.size() == 3) {
    spec.strategies = {parts[1]};
    for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
      if (parts[2] == DTypeName(dtype)) spec.dtype = parts[2];
    }
  } else if (parts[0] == "generation" && parts.size() == 2) {
    spec.strategies = is_strategy(parts[1]) ? std::vector<std::string>{parts[1]} : all_strategies;
  } else if (parts[0] == "attention" && spec.kernels.empty()) {
    spec.kernels = parts.size() == 3 ? std::vector<std::string>{parts[1]} : all_kernels;
  }
}

}  // namespace

// Twice the test suite's case count for every law (the soundness check a few hundred instead
// of its 10,000): with the double-double oracle and cheap case generation the whole run,
// defect catalogue included, takes about two and a half minutes on two cores.
constexpr int kCaseFactor = 2;

Suite DefaultSuite() {
  // The built-in subject lives as long as the program; the shared pointer does not own it.
  return SuiteFor(std::shared_ptr<const Subject>(&BuiltinSubject(), [](const Subject*) {}));
}

Suite SuiteFor(std::shared_ptr<const Subject> subject) {
  Suite suite;
  suite.subject = std::move(subject);
  const Subject& s = *suite.subject;
  std::vector<PropertySpec> laws;
  if (s.builtin) {
    suite.properties.push_back(BoundSoundnessProperty(suite.soundness.get(), 300));
    suite.properties.push_back(OracleAgreementProperty(60));
    laws = TensorProperties();
    // The Metal kernels on the SIMT emulator (their own budget: metal_properties.h).
    for (PropertySpec& spec : MetalProperties()) laws.push_back(spec);
  }
  for (PropertySpec& spec : CacheProperties(suite.cache_stats.get(), s, suite.law_margins.get())) laws.push_back(spec);
  for (PropertySpec& spec :
       AttentionProperties(suite.kernel_stats.get(), suite.envelope_stats.get(), s)) {
    laws.push_back(spec);
  }
  // Generation equivalence on small decoders for every strategy (the check of the KV-cache
  // chapter of "Build a Large Language Model (From Scratch)").
  for (PropertySpec& spec : GenerationProperties(s, suite.law_margins.get())) laws.push_back(spec);
  // An external engine's fused steps and models.
  for (PropertySpec& spec : StepProperties(s)) laws.push_back(spec);
  for (PropertySpec& spec : ModelProperties(s)) laws.push_back(spec);
  // An external engine answers every operation across a pipe or an FFI call (and a Python
  // engine a thousand times slower than kvcheck's own): the test suite's case counts keep a
  // campaign on the book's PyTorch caches (engines/python/torch_caches.py) near 5 minutes on 2
  // cores.
  const int factor = s.builtin ? kCaseFactor : 1;
  for (PropertySpec& spec : laws) {
    spec.default_cases *= factor;
    FillScope(s, spec);
    suite.properties.push_back(std::move(spec));
  }
  return suite;
}

}  // namespace kvcheck::properties
