// kvcheck list: what a run can select, one line each.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "cli/commands.h"
#include "cli/selection.h"
#include "cli/subject_choice.h"
#include "defects/defect_registry.h"
#include "properties/suite.h"

namespace kvcheck::cli {
namespace {

// One line per property family: the names follow the scheme "family/subject/detail", and the
// properties of one family check one law (the first pattern that matches a name describes it).
constexpr std::pair<const char*, const char*> kPropertyLaws[] = {
    {"reference/bound_is_sound", "the reference's derived error bound holds (100-digit truth)"},
    {"reference/oracles_agree", "double-double and 50-digit oracles agree within their guarantee"},
    {"tensor/*", "a tensor operation (views, narrow, cat, cast, bad arguments) against a model"},
    {"cache/*/growth_law", "growth copies O(1) bytes per byte appended (amortised)"},
    {"cache/*/storage_budget", "storage reported exactly; CacheConfig::max_bytes enforced"},
    {"cache/*/*", "state machine: prefill/decode/grow/reset/fork/attend sequences vs the model"},
    {"attention/kernels_vs_reference", "every kernel within the derived bound of the reference"},
    {"attention/precision_envelope", "no kernel less precise than straightforward f32 attention"},
    {"attention/flash_every_simd_target", "the flash kernel on every SIMD target Highway has here"},
    {"attention/decode_equals_prefill_last_row", "decoding a row == the last row of a prefill"},
    {"attention/threads_and_splits", "results independent of thread and KV-split counts"},
    {"attention/batch_permutation_permutes_outputs", "permuting the batch permutes the outputs"},
    {"attention/ring_cache_equals_windowed_history", "ring cache attention == windowed history"},
    {"attention/metal_*_vs_reference", "a Metal kernel (SIMT emulator) vs the reference"},
    {"attention/metal_*", "Metal kernels agree with each other / the CPU kernel"},
    {"attention/*/*", "an engine's kernel vs the reference and the kernel laws"},
    {"generation/chunked_prefill", "chunked prefill generates what one prefill generates"},
    {"generation/reset_between_generations", "a reset cache generates like a fresh one"},
    {"generation/engine_vs_reference", "the decoders' tokens and logits vs the reference decoder"},
    {"generation/*", "cached generation == recomputation from scratch, for one strategy"},
    {"step/*", "an engine's fused decode step vs the reference"},
    {"model/*", "an engine's model generation vs its own recomputation"},
};

std::string LawOf(const std::string& name) {
  for (const auto& [pattern, law] : kPropertyLaws) {
    if (NameSelection(pattern).Matches(name)) return law;
  }
  return "";
}

std::string DTypes(uint32_t mask) {
  std::vector<std::string> names;
  for (DType dtype : kAllDTypes) {
    if ((mask >> static_cast<int>(dtype)) & 1) names.push_back(DTypeName(dtype));
  }
  return absl::StrJoin(names, ",");
}

}  // namespace

int ListCommand(const Settings& settings, const std::vector<std::string>& what) {
  const std::vector<std::string> kinds = {"strategies", "kernels", "properties", "defects"};
  std::vector<std::string> shown = what.empty() ? kinds : what;
  for (const std::string& kind : shown) {
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) {
      const std::vector<std::string> near = NearestNames(kind, kinds, 1);
      std::fprintf(stderr, "kvcheck list: no list '%s'%s (strategies, kernels, properties, "
                           "defects)\n",
                   kind.c_str(), near.empty() ? "" : (" (did you mean " + near[0] + "?)").c_str());
      return kExitUsage;
    }
  }
  absl::StatusOr<ChosenSubject> chosen = OpenSubject(settings.engine);
  if (!chosen.ok()) {
    std::fprintf(stderr, "kvcheck: %s\n", std::string(chosen.status().message()).c_str());
    return kExitUsage;
  }
  const properties::Subject& subject = *chosen->subject;
  for (const std::string& kind : shown) {
    if (shown.size() > 1) std::printf("%s%s:\n", kind == shown.front() ? "" : "\n", kind.c_str());
    if (kind == "strategies") {
      for (const CacheStrategy& s : subject.strategies) {
        std::printf("  %-28s %-13s %s\n", s.name, DTypes(s.dtypes).c_str(),
                    s.summary != nullptr ? s.summary : "");
      }
    } else if (kind == "kernels") {
      for (const AttentionKernel& k : subject.kernels) {
        std::printf("  %-28s %-13s %s%s\n", k.name, DTypes(k.dtypes).c_str(),
                    k.summary != nullptr ? k.summary : "", "");
      }
    } else if (kind == "properties") {
      const properties::Suite suite = properties::SuiteFor(chosen->subject);
      const properties::RunOptions defaults;
      for (const properties::PropertySpec& spec : suite.properties) {
        std::printf("  %-48s %6d cases  %s\n", spec.name.c_str(),
                    properties::CasesFor(spec, defaults), LawOf(spec.name).c_str());
      }
    } else {
      if (!subject.builtin) {
        std::printf("  (the defect catalogue models bugs of kvcheck's own engine)\n");
        continue;
      }
      for (const defects::Defect& d : defects::Defects()) {
        std::printf("  %-40s %s\n", d.name, d.description);
      }
    }
  }
  return kExitPassed;
}

}  // namespace kvcheck::cli
