#include "defects/defect_kill.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "properties/attention_properties.h"
#include "properties/cache_machine.h"
#include "properties/cache_properties.h"
#include "properties/generation_properties.h"
#include "src/base/check.h"

namespace kvcheck::defects {

properties::PropertySpec KillingProperty(const Defect& defect) {
  switch (defect.killer) {
    case Killer::kCacheStateMachine:
    case Killer::kAddressSanitizer:
      return properties::CacheStateMachineProperty(defect.strategy, defect.dtype,
                                                   kStateMachineBudget, nullptr);
    case Killer::kGrowthLaw: {
      properties::PropertySpec spec = properties::GrowthLawProperty(defect.strategy);
      spec.default_cases = kGrowthLawBudget;
      return spec;
    }
    case Killer::kKernelLaws:
      return properties::KernelLawProperty(defect.name, defect.kernel, kKernelLawBudget);
    case Killer::kGenerationLaws: {
      const properties::GeneratorFactory factory = defect.generator;
      const std::string name = absl::StrCat("generation/", defect.name);
      if (std::string(defect.name) == "decoder_no_reset_between_generations") {
        return properties::ResetBetweenGenerationsProperty(factory, kGenerationBudget, name);
      }
      static const CacheStrategy* const prealloc = FindCacheStrategy("prealloc");
      return properties::GenerationEquivalenceProperty(*prealloc, factory, kGenerationBudget,
                                                       name);
    }
    case Killer::kPending:
      break;
  }
  KV_CHECK_MSG(false, "no killing property for a pending defect");
  return {};
}

KillResult RunKill(const Defect& defect, const properties::RunOptions& options) {
  const properties::PropertySpec spec = KillingProperty(defect);
  properties::RunOptions run = options;
  run.case_scale = 1.0;  // the budget is part of the claim
  run.fixed_cases = 0;
  run.max_cases = 0;
  const properties::PropertyOutcome outcome = properties::RunProperty(spec, run);
  KillResult result;
  result.defect = defect.name;
  result.property = spec.name;
  result.killed = !outcome.passed;
  result.cases_until_failure = outcome.cases + (outcome.passed ? 0 : 1);
  result.counterexample_lines = outcome.counterexample_lines;
  result.seconds = outcome.seconds;
  result.message = outcome.message;
  return result;
}

std::string KillTableHeader() {
  return absl::StrFormat("%-40s %-48s %-8s %6s %8s %8s\n", "defect", "killing property",
                         "result", "cases", "cx lines", "seconds");
}

std::string FormatKillRow(const KillResult& r) {
  return absl::StrFormat("%-40s %-48s %-8s %6d %8d %8.2f\n", r.defect, r.property,
                         r.killed ? "killed" : "SURVIVED", r.cases_until_failure,
                         r.counterexample_lines, r.seconds);
}

}  // namespace kvcheck::defects
