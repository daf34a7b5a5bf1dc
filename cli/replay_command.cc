// kvcheck replay FILE...: reads each failure file (report/failure_file.h), runs its property
// on its case alone (RapidCheck's reproduce string: no search, no shrinking), against the
// engine or defect it names, and prints what diverged, or that the case passes now.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/report_builder.h"
#include "cli/subject_choice.h"
#include "defects/defect_kill.h"
#include "defects/defect_registry.h"
#include "properties/suite.h"
#include "rapidcheck/detail/Configuration.h"
#include "report/failure_file.h"

namespace kvcheck::cli {
namespace {

enum class Replayed { kPasses, kFails, kUsage };

Replayed ReplayOne(const Settings& settings, const std::string& path) {
  const auto usage = [&](const std::string& why) {
    std::fprintf(stderr, "kvcheck replay: %s: %s\n", path.c_str(), why.c_str());
    return Replayed::kUsage;
  };
  std::ifstream in(path, std::ios::binary);
  if (!in) return usage("cannot open it");
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<report::FailureFile> file = report::ParseFailureFile(text.str());
  if (!file.ok()) return usage(std::string(file.status().message()));

  reference::Oracle oracle;
  if (!reference::ParseOracle(file->oracle, &oracle)) return usage("unknown oracle");
  reference::SetDefaultOracle(oracle);
  EngineSettings engine = settings.engine;
  if (engine.spec.empty()) {  // --engine on the command line wins over the file's
    engine.spec = file->engine;
    engine.isolate = file->isolate;
  }
  absl::StatusOr<ChosenSubject> chosen = OpenSubject(engine);
  if (!chosen.ok()) return usage(std::string(chosen.status().message()));

  std::optional<properties::PropertySpec> spec;
  // The suite's properties record into its statistics: it outlives the run of `spec`.
  std::optional<properties::Suite> suite;
  if (!file->defect.empty()) {
    const defects::Defect* defect = defects::FindDefect(file->defect);
    if (defect == nullptr || defect->killer == defects::Killer::kPending) {
      std::vector<std::string> names;
      for (const defects::Defect& d : defects::Defects()) names.push_back(d.name);
      const std::vector<std::string> near = NearestNames(file->defect, names);
      return usage(absl::StrCat("no defect '", file->defect, "'",
                                near.empty() ? "" : absl::StrCat(" (did you mean ", near[0], "?)")));
    }
    spec = defects::KillingProperty(*defect);
  } else {
    suite = properties::SuiteFor(chosen->subject);
    std::vector<std::string> names;
    for (const properties::PropertySpec& s : suite->properties) {
      names.push_back(s.name);
      if (s.name == file->property) spec = s;
    }
    if (!spec.has_value()) {
      const std::vector<std::string> near = NearestNames(file->property, names);
      return usage(absl::StrCat("no property '", file->property, "' in this kvcheck",
                                near.empty() ? "" : absl::StrCat(" (did you mean ", near[0], "?)")));
    }
  }
  if (spec->name != file->property) {
    return usage(absl::StrCat("defect ", file->defect, " is killed by ", spec->name, ", not ",
                              file->property));
  }

  // RapidCheck keys a reproduce string by property name; the file's case runs on the property
  // the file names now, so that a defect's killing case, with its `defect:` line dropped and
  // `property:` set to the correct strategy's or kernel's property, replays against the fix.
  rc::detail::Configuration config;
  try {
    config = rc::detail::configFromString(file->reproduce);
  } catch (const rc::detail::ConfigurationException& e) {
    return usage(absl::StrCat("'reproduce' is not a RapidCheck reproduce string: ", e.what()));
  }
  if (config.reproduce.size() != 1) {
    return usage(absl::StrCat("'reproduce' holds ", config.reproduce.size(),
                              " cases; a failure file holds one"));
  }
  const rc::detail::Reproduce the_case = config.reproduce.begin()->second;
  config.reproduce.clear();
  config.reproduce[spec->name] = the_case;

  properties::RunOptions options;
  options.seed = file->seed;
  options.reproduce = rc::detail::configToMinimalString(config);
  options.isolation.mode = settings.isolation;
  options.isolation.timeout_seconds = settings.case_timeout;
  if (chosen->process != nullptr) {
    options.isolation.after_case = [process = chosen->process](properties::CaseEnd end) {
      (void)process->RestartIfNeeded(false, end != properties::CaseEnd::kNone);
    };
  }
  const properties::PropertyOutcome outcome = properties::RunProperty(*spec, options);
  const std::string against =
      file->defect.empty() ? (engine.spec.empty() ? "" : absl::StrCat(" against ", engine.spec))
                           : absl::StrCat(" against defect ", file->defect);
  // After a generator change the reproduce string may select another case: say so, on a
  // pass too (a regression file that no longer replays its case guards nothing).
  const bool differs = outcome.counterexample != file->counterexample;
  const char* const kDiffers =
      "note: the case differs from the file's counterexample (the generators changed since the "
      "file was written); the file's reproduce string still selects it\n";
  if (outcome.reproduced_case_passes) {
    std::printf("%s: %s%s passes now on this case\n", path.c_str(), spec->name.c_str(),
                against.c_str());
    if (differs) std::printf("%s", kDiffers);
    return Replayed::kPasses;
  }
  if (outcome.reproduce.empty()) {
    // The reproduce string does not decode into a case of this kvcheck's generators.
    return usage(absl::StrCat("the case cannot be replayed: ", outcome.message));
  }
  std::printf("%s: %s%s still fails (%s)\n", path.c_str(), spec->name.c_str(), against.c_str(),
              CaseEndName(outcome.end));
  std::printf("\ncase:\n%s\nwhat diverged:\n%s\n", outcome.counterexample.c_str(),
              outcome.description.c_str());
  if (differs) std::printf("%s", kDiffers);
  return Replayed::kFails;
}

}  // namespace

int ReplayCommand(const Settings& settings, const std::vector<std::string>& files) {
  if (files.empty()) {
    std::fprintf(stderr, "kvcheck replay: name at least one failure file\n");
    return kExitUsage;
  }
  int exit_code = kExitPassed;
  for (const std::string& file : files) {
    switch (ReplayOne(settings, UserPath(file))) {
      case Replayed::kUsage:
        return kExitUsage;
      case Replayed::kFails:
        exit_code = kExitFailed;
        break;
      case Replayed::kPasses:
        break;
    }
  }
  return exit_code;
}

}  // namespace kvcheck::cli
