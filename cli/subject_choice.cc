#include "cli/subject_choice.h"

#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "src/engine/engine_entries.h"
#include "src/engine/kvcheck_engine.h"
#include "src/engine/open_engine.h"
#include "src/tensor/dtype.h"

namespace kvcheck::cli {
namespace {

// kvcheck_engine_host next to this binary (bazel-bin/cli/), unless --engine_host says where.
std::string EngineHostPath(const EngineSettings& settings) {
  if (!settings.host.empty()) return settings.host;
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  std::string dir = n > 0 ? std::string(self, n) : std::string("./kvcheck");
  return dir.substr(0, dir.rfind('/') + 1) + "kvcheck_engine_host";
}

std::string Describe(const properties::Subject& subject, const engine::Engine& loaded) {
  std::string text = absl::StrFormat(
      "kvcheck: checking engine %s (%s): %zu strategies, %zu kernels, %zu steppers, %zu models\n",
      subject.name, loaded.description(), subject.strategies.size(), subject.kernels.size(),
      loaded.info().steppers.size(), loaded.info().models.size());
  for (const CacheStrategy& s : subject.strategies) {
    absl::StrAppendFormat(&text, "  strategy %-24s %s%s%s%s\n", s.name, s.windowed ? "windowed " : "",
                          s.per_row ? "per-row " : "", s.forks ? "fork " : "",
                          s.reports_storage ? "stats" : "");
  }
  for (const AttentionKernel& k : subject.kernels) {
    absl::StrAppendFormat(&text, "  kernel   %-24s features 0x%02x dtypes 0x%x\n", k.name,
                          k.features, k.dtypes);
  }
  for (const engine::StepperInfo& s : loaded.info().steppers) {
    absl::StrAppendFormat(&text, "  stepper  %-24s %s%s%sdtypes 0x%x\n", s.name,
                          (s.flags & KVCHECK_STEPPER_WINDOWED) ? absl::StrCat("window ", s.window, " ")
                                                               : "",
                          (s.flags & KVCHECK_STEPPER_RESET) ? "reset " : "",
                          (s.flags & KVCHECK_STEPPER_GQA) ? "gqa " : "", s.dtypes);
  }
  for (const engine::ModelInfo& m : loaded.info().models) {
    absl::StrAppendFormat(&text, "  model    %-24s vocabulary %d, %d tokens, %s%stolerance %g\n",
                          m.name, m.vocab_size, m.max_tokens,
                          (m.flags & KVCHECK_MODEL_RESET) ? "reset " : "",
                          (m.flags & KVCHECK_MODEL_BATCH) ? "batch " : "", m.tolerance);
  }
  return text;
}

bool AnyMatches(const NameSelection& selection, const std::vector<std::string>& names) {
  return std::any_of(names.begin(), names.end(),
                     [&](const std::string& name) { return selection.Matches(name); });
}

}  // namespace

absl::StatusOr<ChosenSubject> OpenSubject(const EngineSettings& settings) {
  ChosenSubject chosen;
  if (settings.spec.empty()) {
    // The built-in subject lives as long as the program; the shared pointer does not own it.
    chosen.subject = std::shared_ptr<const properties::Subject>(
        &properties::BuiltinSubject(), [](const properties::Subject*) {});
    return chosen;
  }
  absl::StatusOr<std::shared_ptr<engine::Engine>> opened = engine::OpenEngine(
      settings.spec, {settings.isolate, EngineHostPath(settings), settings.timeout});
  if (!opened.ok()) return opened.status();
  const std::shared_ptr<engine::Engine> loaded = *std::move(opened);
  chosen.process = std::dynamic_pointer_cast<engine::ProcessEngine>(loaded);
  auto subject = std::make_shared<properties::Subject>();
  subject->name = loaded->info().name;
  subject->strategies = engine::EngineStrategies(loaded);
  subject->kernels = engine::EngineKernels(loaded);
  subject->engine = loaded;
  chosen.description = Describe(*subject, *loaded);
  chosen.subject = std::move(subject);
  return chosen;
}

absl::StatusOr<std::shared_ptr<const properties::Subject>> NarrowSubject(
    std::shared_ptr<const properties::Subject> subject, const NameSelection& strategies,
    const NameSelection& kernels, const NameSelection& dtypes) {
  std::vector<std::string> strategy_names, kernel_names, dtype_names;
  for (const CacheStrategy& s : subject->strategies) strategy_names.push_back(s.name);
  for (const AttentionKernel& k : subject->kernels) kernel_names.push_back(k.name);
  for (DType dtype : kAllDTypes) dtype_names.push_back(DTypeName(dtype));
  if (absl::Status s = strategies.CheckAgainst("--strategy", "strategy", strategy_names); !s.ok()) {
    return s;
  }
  if (absl::Status s = kernels.CheckAgainst("--kernel", "kernel", kernel_names); !s.ok()) return s;
  if (absl::Status s = dtypes.CheckAgainst("--dtype", "dtype", dtype_names); !s.ok()) return s;
  if (strategies.empty() && kernels.empty() && dtypes.empty()) return subject;
  uint32_t dtype_mask = 0;
  for (DType dtype : kAllDTypes) {
    if (dtypes.Matches(DTypeName(dtype))) dtype_mask |= 1u << static_cast<int>(dtype);
  }
  auto narrowed = std::make_shared<properties::Subject>(*subject);
  narrowed->strategies.clear();
  narrowed->kernels.clear();
  for (CacheStrategy s : subject->strategies) {
    s.dtypes &= dtype_mask;
    if (strategies.Matches(s.name) && s.dtypes != 0) narrowed->strategies.push_back(std::move(s));
  }
  for (AttentionKernel k : subject->kernels) {
    k.dtypes &= dtype_mask;
    if (kernels.Matches(k.name) && k.dtypes != 0) narrowed->kernels.push_back(k);
  }
  return std::shared_ptr<const properties::Subject>(std::move(narrowed));
}

bool Selected(const properties::PropertySpec& spec, const Settings& settings) {
  if (!settings.properties.Matches(spec.name)) return false;
  if (!settings.strategies.empty() && !AnyMatches(settings.strategies, spec.strategies)) {
    return false;
  }
  if (!settings.kernels.empty() && !AnyMatches(settings.kernels, spec.kernels)) return false;
  if (!settings.dtypes.empty()) {
    if (spec.dtype.empty()) return !spec.strategies.empty() || !spec.kernels.empty();
    return settings.dtypes.Matches(spec.dtype);
  }
  return true;
}

std::string EngineFlags(const EngineSettings& settings) {
  if (settings.spec.empty()) return "";
  return absl::StrCat("--engine='", settings.spec, "'", settings.isolate ? " --isolate" : "");
}

}  // namespace kvcheck::cli
