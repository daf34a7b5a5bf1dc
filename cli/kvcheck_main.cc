// kvcheck: runs the verification suite (properties/suite.h) against the engine and the
// high-precision reference, prints a summary table, and exits non-zero on any failure.
//
//   bazel run //cli:kvcheck                       # built-in defaults
//   bazel run //cli:kvcheck -- --seed=7 --cases=50 --only=tensor/
//   bazel run //cli:kvcheck -- --reproduce='reproduce=...'   # replay a shrunk failure
#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "defects/defect_kill.h"
#include "defects/defect_registry.h"
#include "src/engine/engine_entries.h"
#include "src/engine/kvcheck_engine.h"
#include "src/engine/open_engine.h"
#include "src/engine/process_engine.h"
#include "properties/property_runner.h"
#include "properties/suite.h"
#include "reference/reference_attention.h"

ABSL_FLAG(uint64_t, seed, 20261129, "Base seed; every failure report names it for replay.");
ABSL_FLAG(int, cases, 0, "Cases per property (0: each property's default).");
ABSL_FLAG(double, case_scale, 1.0, "Multiplies each property's default number of cases.");
ABSL_FLAG(std::string, only, "",
          "Run only the properties whose name starts with this (a comma list: with any of these).");
ABSL_FLAG(std::string, reproduce, "",
          "A RapidCheck reproduce string from a failure report: replays the shrunk case.");
ABSL_FLAG(bool, list, false, "List the properties and their default case counts, then exit.");
ABSL_FLAG(bool, defects, true,
          "After the properties, run the defect catalogue (each defect must be killed).");
ABSL_FLAG(std::string, isolation, "fork",
          "fork: run each case's check in a forked child, so that a crash, abort or hang of the "
          "code under test is a failing case that is shrunk and reported (default); none: run "
          "in this process (for debuggers; a crash ends the run).");
ABSL_FLAG(double, case_timeout, 60,
          "Seconds one case may run (fork isolation) before it is killed and fails as a hang.");
ABSL_FLAG(double, shrink_seconds, 20,
          "Shrinking a failure stops after this many seconds, reporting the smallest failing "
          "case found so far.");
ABSL_FLAG(int, shrink_attempts, 2000,
          "Shrinking a failure stops after this many candidate cases.");
ABSL_FLAG(std::string, engine, "",
          "Check an external engine instead of kvcheck's own: the path of a shared library "
          "implementing the plug-in ABI (a file ending in .so: src/engine/kvcheck_engine.h), or "
          "a command that speaks the process protocol on stdin/stdout "
          "(src/engine/PROTOCOL.md), e.g. 'python3 my_engine.py'.");
ABSL_FLAG(bool, isolate, false,
          "With a plug-in --engine: run it in its own process through kvcheck_engine_host "
          "(an engine that crashes or hangs then never takes kvcheck's case process with it).");
ABSL_FLAG(double, engine_timeout, 30,
          "Seconds one request to a process engine may take before it counts as a hang.");
ABSL_FLAG(std::string, engine_restart, "crash",
          "When a process engine is restarted: crash (after a case that crashed, hung or broke "
          "the protocol) or case (before every case).");
ABSL_FLAG(std::string, engine_host, "",
          "The kvcheck_engine_host binary for --isolate (default: next to kvcheck).");
ABSL_FLAG(std::string, oracle, "dd",
          "The reference's number type: dd (double-double, ~106 bits, the fast default) or real "
          "(50 decimal digits, the cross-check); reference/ERROR_BOUND.md step 6.");

namespace kvcheck {
namespace {

using properties::PropertyOutcome;
using properties::PropertySpec;

// Progress while a property runs: on a terminal one redrawn line (cases, then shrink attempts);
// otherwise a line when shrinking starts and one every 5 seconds of shrinking, so a CI log
// shows where the time goes.
std::function<void(const properties::DriverProgress&)> ProgressPrinter(std::string label,
                                                                       int total,
                                                                       bool interactive) {
  auto last_cases = std::make_shared<int>(-1);
  auto next_report = std::make_shared<double>(0.0);
  return [label, total, interactive, last_cases, next_report](const properties::DriverProgress& p) {
    if (!p.shrinking) {
      const int step = total / 100 + 1;  // redraw at most ~100 times per property
      if (interactive && p.cases / step != *last_cases) {
        *last_cases = p.cases / step;
        std::fprintf(stderr, "\r%s %6d/%d cases", label.c_str(), p.cases, total);
      }
      return;
    }
    if (interactive) {
      std::fprintf(stderr, "\r%s %6d/%d cases, shrinking: %d attempts, %d smaller, %.1f s",
                   label.c_str(), p.cases, total, p.shrink_attempts, p.shrinks_accepted,
                   p.shrink_seconds);
    } else if (p.shrink_attempts == 1 || p.shrink_seconds >= *next_report) {
      *next_report = p.shrink_seconds + 5.0;
      std::fprintf(stderr, "%s failed after %d cases; shrinking: %d attempts, %d smaller, %.1f s\n",
                   label.c_str(), p.cases + 1, p.shrink_attempts, p.shrinks_accepted,
                   p.shrink_seconds);
    }
  };
}

void PrintFinalLine(const std::string& label, const PropertyOutcome& outcome, int total,
                    bool interactive) {
  std::string shrink;
  if (!outcome.passed && outcome.shrink_attempts > 0) {
    shrink = absl::StrFormat(", %d shrink attempts (%d smaller)%s", outcome.shrink_attempts,
                             outcome.shrinks_accepted,
                             outcome.shrink_budget_exhausted ? ", stopped at the budget" : "");
  }
  std::fprintf(stderr, "%s%s %6d/%d cases%s, %.1f s%s\n", interactive ? "\r" : "",
               label.c_str(), outcome.cases, total, shrink.c_str(), outcome.seconds,
               interactive ? "\x1b[K" : "");
}

// What the run checks, and the process engine behind it (if any).
struct Checked {
  std::shared_ptr<const properties::Subject> subject;
  std::shared_ptr<engine::ProcessEngine> process;
};

// kvcheck_engine_host next to this binary (bazel-bin/cli/), unless --engine_host says where.
std::string EngineHostPath() {
  if (!absl::GetFlag(FLAGS_engine_host).empty()) return absl::GetFlag(FLAGS_engine_host);
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  std::string dir = n > 0 ? std::string(self, n) : std::string("./kvcheck");
  return dir.substr(0, dir.rfind('/') + 1) + "kvcheck_engine_host";
}

// The subject of the run: kvcheck's own engine, or the one --engine names. Exits with 2
// when the engine cannot be loaded or started (the message says why).
Checked ChooseSubject() {
  const std::string spec = absl::GetFlag(FLAGS_engine);
  Checked checked;
  if (spec.empty()) {
    checked.subject = std::shared_ptr<const properties::Subject>(
        &properties::BuiltinSubject(), [](const properties::Subject*) {});
    return checked;
  }
  absl::StatusOr<std::shared_ptr<engine::Engine>> opened = engine::OpenEngine(
      spec, {absl::GetFlag(FLAGS_isolate), EngineHostPath(), absl::GetFlag(FLAGS_engine_timeout)});
  if (!opened.ok()) {
    std::fprintf(stderr, "kvcheck: %s\n", std::string(opened.status().message()).c_str());
    std::exit(2);
  }
  const std::shared_ptr<engine::Engine> loaded = *std::move(opened);
  checked.process = std::dynamic_pointer_cast<engine::ProcessEngine>(loaded);
  auto subject = std::make_shared<properties::Subject>();
  subject->name = loaded->info().name;
  subject->strategies = engine::EngineStrategies(loaded);
  subject->kernels = engine::EngineKernels(loaded);
  subject->engine = loaded;
  std::printf("kvcheck: checking engine %s (%s): %zu strategies, %zu kernels, %zu steppers, "
              "%zu models\n",
              subject->name.c_str(), loaded->description().c_str(), subject->strategies.size(),
              subject->kernels.size(), loaded->info().steppers.size(),
              loaded->info().models.size());
  for (const CacheStrategy& s : subject->strategies) {
    std::printf("  strategy %-24s %s%s%s%s\n", s.name, s.windowed ? "windowed " : "",
                s.per_row ? "per-row " : "", s.forks ? "fork " : "",
                s.reports_storage ? "stats" : "");
  }
  for (const AttentionKernel& k : subject->kernels) {
    std::printf("  kernel   %-24s features 0x%02x dtypes 0x%x\n", k.name, k.features, k.dtypes);
  }
  for (const engine::StepperInfo& s : loaded->info().steppers) {
    std::printf("  stepper  %-24s %s%s%sdtypes 0x%x\n", s.name.c_str(),
                (s.flags & KVCHECK_STEPPER_WINDOWED) ? absl::StrCat("window ", s.window, " ").c_str()
                                                     : "",
                (s.flags & KVCHECK_STEPPER_RESET) ? "reset " : "",
                (s.flags & KVCHECK_STEPPER_GQA) ? "gqa " : "", s.dtypes);
  }
  for (const engine::ModelInfo& m : loaded->info().models) {
    std::printf("  model    %-24s vocabulary %lld, %lld tokens, %s%stolerance %g\n",
                m.name.c_str(), static_cast<long long>(m.vocab_size),
                static_cast<long long>(m.max_tokens),
                (m.flags & KVCHECK_MODEL_RESET) ? "reset " : "",
                (m.flags & KVCHECK_MODEL_BATCH) ? "batch " : "", m.tolerance);
  }
  checked.subject = std::move(subject);
  return checked;
}

int Run() {
  const std::string restart = absl::GetFlag(FLAGS_engine_restart);
  if (restart != "crash" && restart != "case") {
    std::fprintf(stderr, "kvcheck: --engine_restart must be crash or case, not '%s'\n",
                 restart.c_str());
    return 3;
  }
  const Checked checked = ChooseSubject();
  properties::Suite suite = properties::SuiteFor(checked.subject);
  std::vector<PropertySpec> selected;
  for (const PropertySpec& spec : suite.properties) {
    for (absl::string_view prefix : absl::StrSplit(absl::GetFlag(FLAGS_only), ',')) {
      if (absl::StartsWith(spec.name, prefix)) {
        selected.push_back(spec);
        break;
      }
    }
  }
  if (absl::GetFlag(FLAGS_list)) {
    for (const PropertySpec& spec : selected) {
      std::printf("%-50s %6d cases\n", spec.name.c_str(), spec.default_cases);
    }
    return 0;
  }
  if (selected.empty()) {
    std::fprintf(stderr, "kvcheck: no property matches --only=%s\n",
                 absl::GetFlag(FLAGS_only).c_str());
    return 2;
  }
  properties::RunOptions options;
  options.seed = absl::GetFlag(FLAGS_seed);
  options.fixed_cases = absl::GetFlag(FLAGS_cases);
  options.case_scale = absl::GetFlag(FLAGS_case_scale);
  options.reproduce = absl::GetFlag(FLAGS_reproduce);
  if (!properties::ParseIsolation(absl::GetFlag(FLAGS_isolation), &options.isolation.mode)) {
    std::fprintf(stderr, "kvcheck: --isolation must be fork or none, not '%s'\n",
                 absl::GetFlag(FLAGS_isolation).c_str());
    return 3;
  }
  reference::Oracle oracle;
  if (!reference::ParseOracle(absl::GetFlag(FLAGS_oracle), &oracle)) {
    std::fprintf(stderr, "kvcheck: --oracle must be dd or real, not '%s'\n",
                 absl::GetFlag(FLAGS_oracle).c_str());
    return 3;
  }
  reference::SetDefaultOracle(oracle);
  options.isolation.timeout_seconds = absl::GetFlag(FLAGS_case_timeout);
  options.shrink_seconds = absl::GetFlag(FLAGS_shrink_seconds);
  options.shrink_attempts = absl::GetFlag(FLAGS_shrink_attempts);
  if (!absl::GetFlag(FLAGS_engine).empty()) {
    options.replay_flags = absl::StrCat("--engine='", absl::GetFlag(FLAGS_engine), "'",
                                        absl::GetFlag(FLAGS_isolate) ? " --isolate" : "");
  }
  if (checked.process != nullptr) {
    // Between cases: a fresh engine after a case that died mid-request (or before every case).
    options.isolation.after_case = [process = checked.process,
                                    always = restart == "case"](properties::CaseEnd end) {
      const absl::Status restarted =
          process->RestartIfNeeded(always, end != properties::CaseEnd::kNone);
      if (!restarted.ok()) {
        std::fprintf(stderr, "kvcheck: restarting the engine failed: %s\n",
                     std::string(restarted.message()).c_str());
      }
    };
  }
  const bool interactive = isatty(fileno(stderr));
  std::printf("kvcheck: %zu properties, seed %llu, isolation %s, oracle %s\n", selected.size(),
              static_cast<unsigned long long>(options.seed),
              properties::IsolationName(options.isolation.mode), reference::OracleName(oracle));
  std::fflush(stdout);

  std::vector<PropertyOutcome> outcomes;
  for (size_t i = 0; i < selected.size(); ++i) {
    const PropertySpec& spec = selected[i];
    options.progress = ProgressPrinter(
        absl::StrFormat("[%2zu/%zu] %-50s", i + 1, selected.size(), spec.name),
        properties::CasesFor(spec, options), interactive);
    PropertyOutcome outcome = properties::RunProperty(spec, options);
    PrintFinalLine(absl::StrFormat("[%2zu/%zu] %-50s", i + 1, selected.size(), spec.name),
                   outcome, properties::CasesFor(spec, options), interactive);
    if (!outcome.passed) {
      std::fprintf(stderr, "FAILED %s\n%s\n%s\n", outcome.name.c_str(), outcome.message.c_str(),
                   outcome.replay.c_str());
    }
    outcomes.push_back(std::move(outcome));
  }

  int passed = 0;
  std::printf("\n%-50s %8s %9s  %s\n", "property", "cases", "seconds", "result");
  for (const PropertyOutcome& o : outcomes) {
    passed += o.passed ? 1 : 0;
    std::printf("%-50s %8d %9.2f  %s\n", o.name.c_str(), o.cases, o.seconds,
                o.passed ? "PASS" : "FAIL");
  }
  // The cache state machines: one row per strategy and dtype.
  int width = 12;
  for (const CacheStrategy& s : suite.subject->strategies) {
    width = std::max(width, static_cast<int>(std::strlen(s.name)));
  }
  bool header = false;
  for (const PropertyOutcome& o : outcomes) {
    auto stats = suite.cache_stats->find(o.name);
    if (stats == suite.cache_stats->end()) continue;
    if (!header) {
      std::printf("\n%-*s %-6s %8s %10s  %s\n", width, "strategy", "dtype", "cases", "commands",
                  "result");
      header = true;
    }
    // Names are "cache/<strategy>/<dtype>".
    const std::vector<std::string> parts = absl::StrSplit(o.name, '/');
    std::printf("%-*s %-6s %8d %10lld  %s\n", width, parts[1].c_str(), parts[2].c_str(), o.cases,
                static_cast<long long>(stats->second.commands), o.passed ? "PASS" : "FAIL");
  }
  if (!suite.kernel_stats->empty()) {
    std::printf("\nAttention kernels against the reference (observed error / bound):\n%s",
                properties::FormatKernelStats(*suite.kernel_stats).c_str());
  }
  if (!suite.envelope_stats->empty()) {
    std::printf("\nPrecision envelope against the straightforward f32 baseline (error / allowed; "
                "above 1 is a precision regression):\n%s",
                properties::FormatEnvelopeStats(*suite.envelope_stats).c_str());
  }
  if (suite.soundness->problems > 0) {
    std::printf("\nError-bound tightness (observed error / bound, straightforward f32 "
                "attention):\n%s",
                suite.soundness->Report().c_str());
  }
  int failed = static_cast<int>(outcomes.size()) - passed;
  std::printf("\n%d passed, %d failed\n", passed, failed);

  // The defect catalogue: every defect must be killed by its property within its budget.
  int survived = 0;
  // (kvcheck's own catalogue: not run when checking another engine.)
  if (absl::GetFlag(FLAGS_defects) && absl::GetFlag(FLAGS_only).empty() &&
      suite.subject->builtin) {
    std::printf("\nDefect catalogue (each must be killed):\n%s",
                defects::KillTableHeader().c_str());
    for (const defects::Defect& defect : defects::Defects()) {
      if (defect.killer == defects::Killer::kPending) {
        std::printf("%-40s %-52s %s\n", defect.name, "(needs the decoders)", "pending");
        continue;
      }
      properties::RunOptions kill_options = options;
      kill_options.progress = nullptr;
      const defects::KillResult result = defects::RunKill(defect, kill_options);
      std::printf("%s", defects::FormatKillRow(result).c_str());
      std::fflush(stdout);
      if (!result.killed) ++survived;
    }
    std::printf("\n%d defects survived\n", survived);
  }
  return failed == 0 && survived == 0 ? 0 : 1;
}

}  // namespace
}  // namespace kvcheck

int main(int argc, char** argv) {
  // The suite's cases are small: OpenBLAS's worker threads (which spin and yield between
  // products) cost more than they save, and each forked case would start them again.
  openblas_set_num_threads(1);
  absl::SetProgramUsageMessage(
      "Checks KV-cache strategies and attention kernels against a 50-digit reference.\n"
      "Runs the built-in suite with a fixed seed; every failure prints the seed and a shrunk,\n"
      "replayable counterexample.");
  absl::ParseCommandLine(argc, argv);
  return kvcheck::Run();
}
