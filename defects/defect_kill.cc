#include "defects/defect_kill.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "defects/counterexample_size.h"
#include "properties/attention_properties.h"
#include "properties/cache_machine.h"
#include "properties/cache_properties.h"
#include "properties/generation_properties.h"
#include "properties/metal_properties.h"
#include "src/base/check.h"

namespace kvcheck::defects {

properties::PropertySpec KillingProperty(const Defect& defect) {
  switch (defect.killer) {
    case Killer::kCacheStateMachine:
      return properties::CacheStateMachineProperty(defect.strategy, defect.dtype,
                                                   kStateMachineBudget, nullptr);
    case Killer::kGrowthLaw: {
      properties::PropertySpec spec = properties::GrowthLawProperty(defect.strategy);
      spec.default_cases = kGrowthLawBudget;
      return spec;
    }
    case Killer::kKernelLaws:
      return properties::KernelLawProperty(defect.name, defect.kernel, kKernelLawBudget);
    case Killer::kPrecisionEnvelope:
      return properties::PrecisionEnvelopeLawProperty(defect.name, defect.kernel,
                                                      kKernelLawBudget);
    case Killer::kMetalKernelLaws:
      return properties::MetalKernelLawProperty(defect.name, defect.kernel, kMetalKernelBudget);
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
  // Defects crash (an out-of-bounds write, an abort): always in a forked child, whatever the
  // isolation the properties ran with, so that one defect never ends the catalogue's run.
  run.isolation.mode = properties::Isolation::kFork;
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
  result.find_seconds = outcome.search_seconds;
  result.shrink_budget_exhausted = outcome.shrink_budget_exhausted;
  result.end = outcome.end;
  result.message = outcome.message;
  result.outcome = outcome;
  return result;
}

std::string KillTableHeader() {
  return absl::StrFormat("%-40s %-52s %-16s %6s %8s %7s %9s  %s\n", "defect", "killing property",
                         "result", "cases", "cx lines", "find s", "total s",
                         "shrunk counterexample");
}

std::string FormatKillRow(const KillResult& r) {
  const char* how = !r.killed                                    ? "SURVIVED"
                    : r.end == properties::CaseEnd::kCrash   ? "killed (crash)"
                    : r.end == properties::CaseEnd::kTimeout ? "killed (hang)"
                                                             : "killed";
  return absl::StrFormat("%-40s %-52s %-16s %6d %8d %7.2f %8.2f%s  %s\n", r.defect, r.property,
                         how, r.cases_until_failure, r.counterexample_lines, r.find_seconds,
                         r.seconds, r.shrink_budget_exhausted ? "+" : " ",
                         r.killed ? CounterexampleSize(r.outcome.counterexample) : "");
}

}  // namespace kvcheck::defects
