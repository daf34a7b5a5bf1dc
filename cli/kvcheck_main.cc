// kvcheck: checks KV-cache strategies and attention kernels (kvcheck's own or an engine's)
// against a high-precision reference and runs the defect catalogue.
//
//   kvcheck [run] [flags]             the suite (the default), or what the flags select
//   kvcheck list [strategies|kernels|properties|defects]
//   kvcheck replay FILE...            re-run the case of failure files
//   kvcheck help                      every flag
//
// Flags are parsed here, not by absl::ParseCommandLine, so that every usage error is one line
// and exit code 3 (Abseil's parser exits 1 on an unknown flag, which CI would read as "a
// property failed").
#include <cblas.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <optional>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "cli/commands.h"
#include "cli/selection.h"
#include "cli/settings.h"

ABSL_FLAG(uint64_t, seed, 20261129, "Base seed; every failure names it for replay.");
ABSL_FLAG(int, cases, 0, "Cases per property (0: each property's default).");
ABSL_FLAG(double, case_scale, 1.0, "Multiplies each property's default number of cases.");
ABSL_FLAG(std::string, property, "",
          "Run the properties whose names match: a comma list of names and globs; a name also "
          "selects the names under it (cache/ring: cache/ring/f32, ...). kvcheck list "
          "properties shows them.");
ABSL_FLAG(std::string, only, "", "The same as --property (the older name).");
ABSL_FLAG(std::string, strategy, "",
          "Run the properties of these cache strategies (comma list, globs): their state "
          "machines, growth and storage laws, generation laws.");
ABSL_FLAG(std::string, kernel, "",
          "Run the properties of these attention kernels (comma list, globs), each law over the "
          "selected kernels only.");
ABSL_FLAG(std::string, dtype, "",
          "Only these dtypes (f32, f16, bf16; comma list): state machines and an engine's "
          "stepper laws of that dtype, kernel laws drawing only it.");
ABSL_FLAG(std::string, defect, "",
          "Run these catalogued defects (comma list, globs; kvcheck list defects): each must be "
          "killed; every kill leaves a replay file in <failures_dir>/defects/. Without "
          "--property/--strategy/--kernel/--dtype, only the defects run.");
ABSL_FLAG(bool, defects, true,
          "After the properties of an unselected run, run the whole defect catalogue.");
ABSL_FLAG(double, max_seconds, 0,
          "Stop the whole run after this many seconds (0: no limit): running properties stop "
          "generating, shrink a failure within its budget and report what ran; properties not "
          "started are reported as not run.");
ABSL_FLAG(double, property_seconds, 0,
          "Stop generating a property's cases after this many seconds (0: no limit).");
ABSL_FLAG(int, threads, 0,
          "Properties run on this many worker processes at once (0: one per CPU). Results are "
          "the same for any number.");
ABSL_FLAG(std::string, failures_dir, "kvcheck-failures",
          "Every failure is written here as a replay file (kvcheck replay FILE).");
ABSL_FLAG(std::string, report, "",
          "Write report.json, report.md, report.xml (JUnit) and report.html into this directory.");
ABSL_FLAG(std::string, baseline, "",
          "An earlier report.json: regressions against it (a property that passed now fails, a "
          "kernel's max error/bound up more than 2x, a defect no longer killed or killed 4x "
          "slower, the suite 30% slower) make the exit code 2.");
ABSL_FLAG(std::string, reproduce, "",
          "A RapidCheck reproduce string from a failure report: replays the shrunk case.");
ABSL_FLAG(std::string, isolation, "fork",
          "fork: run each case's check in a forked child, so that a crash, abort or hang of the "
          "code under test is a failing case that is shrunk and reported (default); none: run "
          "in this process (for debuggers, with --threads=1; a crash ends the run).");
ABSL_FLAG(double, case_timeout, 60,
          "Seconds one case may run (fork isolation) before it is killed and fails as a hang.");
ABSL_FLAG(double, shrink_seconds, 20,
          "Shrinking a failure stops after this many seconds, reporting the smallest failing "
          "case found so far.");
ABSL_FLAG(int, shrink_attempts, 2000, "Shrinking a failure stops after this many candidate cases.");
ABSL_FLAG(std::string, engine, "",
          "Check an external engine instead of kvcheck's own: the path of a shared library "
          "implementing the plug-in ABI (a file ending in .so: src/engine/kvcheck_engine.h), or "
          "a command that speaks the process protocol on stdin/stdout "
          "(src/engine/PROTOCOL.md), e.g. 'python3 my_engine.py'.");
ABSL_FLAG(bool, isolate, false,
          "With a plug-in --engine: run it in its own process through kvcheck_engine_host.");
ABSL_FLAG(double, engine_timeout, 30,
          "Seconds one request to a process engine may take before it counts as a hang (its "
          "start-up handshake gets at least 30).");
ABSL_FLAG(std::string, engine_restart, "crash",
          "When a process engine is restarted: crash (after a case that crashed, hung or broke "
          "the protocol) or case (before every case).");
ABSL_FLAG(std::string, engine_host, "",
          "The kvcheck_engine_host binary for --isolate (default: next to kvcheck).");
ABSL_FLAG(bool, verbose, false,
          "Also print a line per property as it ends and, after the summary, the tables behind "
          "it: every property, the state machines' commands, every kernel's error / bound and "
          "precision-envelope ratios per dtype, the bound's tightness.");
ABSL_FLAG(std::string, oracle, "dd",
          "The reference's number type: dd (double-double, ~106 bits, the fast default), real "
          "(50 decimal digits, the cross-check) or real100 (100 digits, the ground truth of "
          "the oracles' agreement check); reference/ERROR_BOUND.md step 6.");

namespace kvcheck::cli {

std::string UserPath(const std::string& path) {
  const char* where = std::getenv("BUILD_WORKING_DIRECTORY");
  if (path.empty() || path[0] == '/' || where == nullptr || *where == '\0') return path;
  return absl::StrCat(where, "/", path);
}

namespace {

constexpr const char* kSubcommands[] = {"run", "list", "replay", "help"};

// The flags of this file, in their order here, for help and suggestions.
std::vector<absl::CommandLineFlag*> OwnFlags() {
  std::vector<absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (absl::EndsWith(flag->Filename(), "kvcheck_main.cc")) flags.push_back(flag);
  }
  std::sort(flags.begin(), flags.end(),
            [](auto* a, auto* b) { return a->Name() < b->Name(); });
  return flags;
}

void PrintHelp() {
  std::printf(
      "kvcheck: checks KV-cache strategies and attention kernels against a high-precision "
      "reference.\n\n"
      "  kvcheck [run] [flags]      run the suite and the defect catalogue (or what flags select)\n"
      "  kvcheck list [strategies|kernels|properties|defects]\n"
      "  kvcheck replay FILE...     re-run the case of failure files (exit 1 if one still fails)\n"
      "  kvcheck help               this text\n\n"
      "Exit codes: 0 all good, 1 failures, 2 regressions against --baseline, 3 usage error.\n\n"
      "Flags:\n");
  for (absl::CommandLineFlag* flag : OwnFlags()) {
    std::printf("  --%s (default %s)\n      %s\n", std::string(flag->Name()).c_str(),
                flag->DefaultValue().empty() ? "\"\"" : flag->DefaultValue().c_str(),
                flag->Help().c_str());
  }
}

int UsageError(const std::string& message) {
  std::fprintf(stderr, "kvcheck: %s (kvcheck help lists the flags)\n", message.c_str());
  return kExitUsage;
}

// Sets the flags of argv; returns the positional arguments, or an error message.
absl::StatusOr<std::vector<std::string>> ParseFlags(int argc, char** argv) {
  std::vector<std::string> positional;
  std::vector<std::string> names;
  for (absl::CommandLineFlag* flag : OwnFlags()) names.push_back(std::string(flag->Name()));
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      for (++i; i < argc; ++i) positional.push_back(argv[i]);
      break;
    }
    if (!absl::StartsWith(arg, "-") || arg == "-") {
      positional.push_back(arg);
      continue;
    }
    arg = arg.substr(arg[1] == '-' ? 2 : 1);
    const size_t equals = arg.find('=');
    std::string name = arg.substr(0, equals);
    std::optional<std::string> value;
    if (equals != std::string::npos) value = arg.substr(equals + 1);
    if (name == "help" || name == "h" || name == "helpfull") {
      positional.insert(positional.begin(), "help");
      continue;
    }
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    bool negated = false;
    if ((flag == nullptr || !absl::EndsWith(flag->Filename(), "kvcheck_main.cc")) &&
        absl::StartsWith(name, "no")) {
      flag = absl::FindCommandLineFlag(name.substr(2));
      negated = flag != nullptr && flag->IsOfType<bool>() && !value.has_value();
      if (!negated) flag = nullptr;
    }
    if (flag == nullptr || !absl::EndsWith(flag->Filename(), "kvcheck_main.cc")) {
      const std::vector<std::string> near = NearestNames(name, names, 2);
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown flag --", name,
          near.empty() ? "" : absl::StrCat(" (did you mean --", absl::StrJoin(near, ", --"), "?)")));
    }
    if (negated) {
      value = "false";
    } else if (!value.has_value()) {
      if (flag->IsOfType<bool>()) {
        value = "true";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value"));
      }
    }
    std::string error;
    if (!flag->ParseFrom(*value, &error)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, "=", *value, ": ", error.empty() ? "not a valid value" : error));
    }
  }
  return positional;
}

// The settings of the flags, or a usage error.
absl::StatusOr<Settings> ReadSettings(int argc, char** argv) {
  Settings s;
  // As a shell reads it back: an argument with spaces or quotes is single-quoted.
  s.command_line = "kvcheck";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool plain = arg.find_first_of(" \t'\"\\$`*?;&|<>()") == std::string::npos;
    absl::StrAppend(&s.command_line, " ",
                    plain ? arg : absl::StrCat("'", absl::StrReplaceAll(arg, {{"'", "'\\''"}}), "'"));
  }
  s.engine.spec = absl::GetFlag(FLAGS_engine);
  s.engine.isolate = absl::GetFlag(FLAGS_isolate);
  s.engine.timeout = absl::GetFlag(FLAGS_engine_timeout);
  const std::string restart = absl::GetFlag(FLAGS_engine_restart);
  if (restart != "crash" && restart != "case") {
    return absl::InvalidArgumentError(
        absl::StrCat("--engine_restart must be crash or case, not '", restart, "'"));
  }
  s.engine.restart_every_case = restart == "case";
  s.engine.host = absl::GetFlag(FLAGS_engine_host);
  s.seed = absl::GetFlag(FLAGS_seed);
  s.cases = absl::GetFlag(FLAGS_cases);
  s.case_scale = absl::GetFlag(FLAGS_case_scale);
  if (s.cases < 0 || !(s.case_scale > 0) || s.case_scale > 1e6) {
    return absl::InvalidArgumentError("--cases must be >= 0 and --case_scale in (0, 1e6]");
  }
  std::string properties = absl::GetFlag(FLAGS_property);
  if (!absl::GetFlag(FLAGS_only).empty()) {
    properties = properties.empty() ? absl::GetFlag(FLAGS_only)
                                    : absl::StrCat(properties, ",", absl::GetFlag(FLAGS_only));
  }
  s.properties = NameSelection(properties);
  s.strategies = NameSelection(absl::GetFlag(FLAGS_strategy));
  s.kernels = NameSelection(absl::GetFlag(FLAGS_kernel));
  s.dtypes = NameSelection(absl::GetFlag(FLAGS_dtype));
  s.defects = NameSelection(absl::GetFlag(FLAGS_defect));
  s.run_defects = absl::GetFlag(FLAGS_defects);
  s.reproduce = absl::GetFlag(FLAGS_reproduce);
  if (!properties::ParseIsolation(absl::GetFlag(FLAGS_isolation), &s.isolation)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--isolation must be fork or none, not '", absl::GetFlag(FLAGS_isolation), "'"));
  }
  s.case_timeout = absl::GetFlag(FLAGS_case_timeout);
  s.shrink_seconds = absl::GetFlag(FLAGS_shrink_seconds);
  s.shrink_attempts = absl::GetFlag(FLAGS_shrink_attempts);
  s.oracle = absl::GetFlag(FLAGS_oracle);
  reference::Oracle oracle;
  if (!reference::ParseOracle(s.oracle, &oracle)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--oracle must be dd, real or real100, not '", s.oracle, "'"));
  }
  reference::SetDefaultOracle(oracle);
  s.max_seconds = absl::GetFlag(FLAGS_max_seconds);
  s.property_seconds = absl::GetFlag(FLAGS_property_seconds);
  if (s.max_seconds < 0 || s.property_seconds < 0) {
    return absl::InvalidArgumentError("--max_seconds and --property_seconds must be >= 0");
  }
  s.threads = absl::GetFlag(FLAGS_threads);
  if (s.threads < 0 || s.threads > 256) {
    return absl::InvalidArgumentError("--threads must be between 0 (one per CPU) and 256");
  }
  if (s.threads == 0) s.threads = std::max(1u, std::thread::hardware_concurrency());
  if (s.isolation == properties::Isolation::kInProcess) s.threads = 1;  // a debugger's run
  s.failures_dir = UserPath(absl::GetFlag(FLAGS_failures_dir));
  // Under `bazel test`, failures go where Bazel keeps a test's outputs.
  if (const char* outputs = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR");
      outputs != nullptr && absl::GetFlag(FLAGS_failures_dir) == "kvcheck-failures") {
    s.failures_dir = absl::StrCat(outputs, "/kvcheck-failures");
  }
  s.report_dir = UserPath(absl::GetFlag(FLAGS_report));
  s.baseline = UserPath(absl::GetFlag(FLAGS_baseline));
  s.verbose = absl::GetFlag(FLAGS_verbose);
  return s;
}

}  // namespace
}  // namespace kvcheck::cli

int main(int argc, char** argv) {
  using namespace kvcheck::cli;  // NOLINT: main only dispatches
  // The suite's cases are small: OpenBLAS's worker threads (which spin and yield between
  // products) cost more than they save, and each forked case would start them again.
  openblas_set_num_threads(1);
  absl::StatusOr<std::vector<std::string>> positional = ParseFlags(argc, argv);
  if (!positional.ok()) return UsageError(std::string(positional.status().message()));
  std::string command = positional->empty() ? "run" : positional->front();
  std::vector<std::string> rest;
  if (!positional->empty()) rest.assign(positional->begin() + 1, positional->end());
  if (command == "help") {
    PrintHelp();
    return kExitPassed;
  }
  if (std::find(std::begin(kSubcommands), std::end(kSubcommands), command) ==
      std::end(kSubcommands)) {
    const std::vector<std::string> near =
        NearestNames(command, {std::begin(kSubcommands), std::end(kSubcommands)}, 1);
    return UsageError(absl::StrCat("unknown command '", command, "'",
                                   near.empty() ? "" : absl::StrCat(" (did you mean ", near[0], "?)"),
                                   "; the commands are run, list, replay, help"));
  }
  absl::StatusOr<Settings> settings = ReadSettings(argc, argv);
  if (!settings.ok()) return UsageError(std::string(settings.status().message()));
  if (command == "list") return ListCommand(*settings, rest);
  if (command == "replay") return ReplayCommand(*settings, rest);
  if (!rest.empty()) {
    return UsageError(absl::StrCat("kvcheck run takes no arguments, got '", rest.front(), "'"));
  }
  return RunCommand(*settings);
}
