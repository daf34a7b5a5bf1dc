#include "properties/property_runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/strings/match.h"
#include "absl/strings/ascii.h"
#include "rapidcheck.h"
#include "rapidcheck/detail/Configuration.h"
#include "reference/reference_attention.h"

namespace kvcheck::properties {
namespace {

// A per-property seed, so that properties run with the same base seed do not share streams.
uint64_t PropertySeed(uint64_t base, const std::string& name) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return base ^ h;
}

double EnvDouble(const char* name, double fallback) {
  double value;
  const char* text = std::getenv(name);
  return text != nullptr && absl::SimpleAtod(text, &value) && value > 0 ? value : fallback;
}

// RapidCheck's failure description without the checker's source. A check's report starts
// with its file and line, then the check's text (a state machine puts the failing command
// before it). An RC_FAIL's text is the C++ that built its message ("RC_FAIL(absl::StrCat(
// ...))"), and the message follows: both go. Another assertion's condition ("RC_ASSERT(x <
// 50)") stays, with its expansion: it is the only statement of what failed.
// "properties/x.cc:117:" (a file name, a line number and a colon, nothing else).
bool IsSourceLocation(absl::string_view line) {
  line = absl::StripAsciiWhitespace(line);
  if (!absl::ConsumeSuffix(&line, ":")) return false;
  const size_t colon = line.rfind(':');
  if (colon == absl::string_view::npos || colon + 1 == line.size()) return false;
  for (char c : line.substr(colon + 1)) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  const absl::string_view file = line.substr(0, colon);
  for (const char* extension : {".cc", ".h", ".cpp", ".hpp"}) {
    if (absl::EndsWith(file, extension)) return file.find(' ') == absl::string_view::npos;
  }
  return false;
}

std::string PlainDescription(const std::string& description) {
  const std::vector<std::string> lines = absl::StrSplit(description, '\n');
  std::vector<std::string> kept;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!IsSourceLocation(lines[i])) {
      kept.push_back(lines[i]);
      continue;
    }
    const absl::string_view next =
        i + 1 < lines.size() ? absl::StripLeadingAsciiWhitespace(lines[i + 1]) : "";
    if (absl::StartsWith(next, "RC_FAIL(")) {
      ++i;  // the RC_FAIL line, and the blank line after it
      if (i + 1 < lines.size() && absl::StripAsciiWhitespace(lines[i + 1]).empty()) ++i;
    }
  }
  return absl::StrJoin(kept, "\n");
}

// One generated value of a counterexample: a C++ class's type name says nothing to a reader
// (its value labels itself), a primitive's type is kept ("long:\n11").
std::string CounterexampleEntry(const std::string& type, const std::string& value) {
  const bool class_type = type.find("::") != std::string::npos || type.find('<') != std::string::npos;
  return class_type ? absl::StrCat(value, "\n") : absl::StrCat(type, ":\n", value, "\n");
}

// "Falsifiable after 3 cases and 5 shrinks", the counterexample's values, the failure.
std::string FailureMessage(const DriverResult& result) {
  std::string text = absl::StrCat("Falsifiable after ", result.successes + 1, " cases and ",
                                  result.shrinks_accepted, " shrinks (of ", result.shrink_attempts,
                                  " attempts)");
  if (result.shrink_budget_exhausted) {
    absl::StrAppendFormat(&text,
                          " (shrinking stopped at its budget after %d attempts in %.1f s: the "
                          "case below is the smallest found so far, not a minimal one)",
                          result.shrink_attempts, result.shrink_seconds);
  }
  absl::StrAppend(&text, "\n");
  for (const auto& [type, value] : result.counterexample) {
    absl::StrAppend(&text, "\n", CounterexampleEntry(type, value));
  }
  absl::StrAppend(&text, "\n", PlainDescription(result.description), "\n");
  return text;
}

// The shrunk case as RapidCheck shows it: each generated value's type, then the value.
std::string CounterexampleText(const DriverResult& result) {
  std::string text;
  for (const auto& [type, value] : result.counterexample) {
    absl::StrAppend(&text, text.empty() ? "" : "\n", CounterexampleEntry(type, value));
  }
  return text;
}

}  // namespace

RunOptions RunOptionsFromEnvironment() {
  RunOptions options;
  if (const char* seed = std::getenv("KVCHECK_SEED")) {
    uint64_t value;
    if (absl::SimpleAtoi(seed, &value)) options.seed = value;
  }
  if (const char* scale = std::getenv("KVCHECK_CASE_SCALE")) {
    double value;
    if (absl::SimpleAtod(scale, &value) && value > 0) options.case_scale = value;
  }
  if (const char* reproduce = std::getenv("KVCHECK_REPRODUCE")) options.reproduce = reproduce;
  if (const char* oracle = std::getenv("KVCHECK_ORACLE")) {
    reference::Oracle parsed;
    if (reference::ParseOracle(oracle, &parsed)) reference::SetDefaultOracle(parsed);
  }
  if (const char* isolation = std::getenv("KVCHECK_ISOLATION")) {
    ParseIsolation(isolation, &options.isolation.mode);
  }
  options.isolation.timeout_seconds =
      EnvDouble("KVCHECK_CASE_TIMEOUT", options.isolation.timeout_seconds);
  options.shrink_seconds = EnvDouble("KVCHECK_SHRINK_SECONDS", options.shrink_seconds);
  options.shrink_attempts =
      static_cast<int>(EnvDouble("KVCHECK_SHRINK_ATTEMPTS", options.shrink_attempts));
  return options;
}

int CasesFor(const PropertySpec& spec, const RunOptions& options) {
  if (options.fixed_cases > 0) return options.fixed_cases;
  int cases = static_cast<int>(std::lround(spec.default_cases * options.case_scale));
  if (options.max_cases > 0 && cases > options.max_cases) cases = options.max_cases;
  return cases < 1 ? 1 : cases;
}

PropertyOutcome RunProperty(const PropertySpec& spec, const RunOptions& options) {
  PropertyOutcome outcome;
  outcome.name = spec.name;
  DriverOptions driver;
  driver.seed = PropertySeed(options.seed, spec.name);
  driver.cases = CasesFor(spec, options);
  driver.max_size = spec.max_size;
  driver.shrink_seconds = options.shrink_seconds;
  driver.shrink_attempts = options.shrink_attempts;
  driver.progress = options.progress;
  driver.deadline = options.deadline;
  outcome.seed = options.seed;
  if (!options.reproduce.empty()) {
    const auto reproduce_map = rc::detail::configFromString(options.reproduce).reproduce;
    const auto found = reproduce_map.find(spec.name);
    if (found == reproduce_map.end()) {
      // The reproduce string is for another property: nothing to run here.
      outcome.passed = true;
      outcome.message = "not the property of the reproduce string: skipped";
      return outcome;
    }
    driver.reproduce = found->second;
  }
  IsolationScope isolation(options.isolation);
  const auto start = std::chrono::steady_clock::now();
  const DriverResult result = DriveProperty(rc::detail::toProperty(spec.body), driver);
  outcome.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  outcome.search_seconds = result.search_seconds;
  outcome.cases = result.successes;
  outcome.distribution = result.distribution;
  outcome.stopped_at_deadline = result.stopped_at_deadline;
  switch (result.kind) {
    case DriverResult::Kind::kPassed:
      outcome.passed = true;
      outcome.message = absl::StrCat("OK, passed ", result.successes, " cases",
                                     result.stopped_at_deadline ? " (stopped at the time limit)"
                                                                : "");
      return outcome;
    case DriverResult::Kind::kGaveUp:
      outcome.message = absl::StrCat("Gave up after ", result.successes, " cases and ",
                                     result.discards, " discarded ones: ", result.description);
      return outcome;
    case DriverResult::Kind::kNotReproduced:
      outcome.message = absl::StrCat("Could not reproduce: ", result.description);
      return outcome;
    case DriverResult::Kind::kReproducedCasePasses:
      outcome.message = absl::StrCat("Could not reproduce: ", result.description);
      outcome.reproduced_case_passes = true;
      outcome.counterexample = CounterexampleText(result);
      return outcome;
    case DriverResult::Kind::kFailed:
      break;
  }
  outcome.message = FailureMessage(result);
  outcome.counterexample = CounterexampleText(result);
  outcome.description = PlainDescription(result.description);
  outcome.end = result.end;
  outcome.shrink_attempts = result.shrink_attempts;
  outcome.shrinks_accepted = result.shrinks_accepted;
  outcome.shrink_budget_exhausted = result.shrink_budget_exhausted;
  for (const auto& [type, value] : result.counterexample) {
    outcome.counterexample_lines +=
        1 + static_cast<int>(std::count(value.begin(), value.end(), '\n'));
  }
  rc::detail::Configuration config;
  config.testParams.seed = driver.seed;
  config.reproduce[spec.name] = result.reproduce;
  const std::string reproduce = rc::detail::configToMinimalString(config);
  outcome.reproduce = reproduce;
  const std::string command =
      options.replay_flags.empty() ? "kvcheck" : absl::StrCat("kvcheck ", options.replay_flags);
  outcome.replay = absl::StrCat(
      "replay: ", command, " --seed=", options.seed, " --property=", spec.name,
      " (tests: KVCHECK_SEED=", options.seed, "); jump straight to the shrunk case with ",
      command, " --property=", spec.name, " --reproduce='", reproduce,
      "' (tests: KVCHECK_REPRODUCE='", reproduce, "')");
  return outcome;
}

std::string FormatDistribution(const PropertyOutcome& outcome) {
  // Cases per individual tag (a case with tags {a, b} counts for both), so that the
  // frequency of each event reads directly.
  std::map<std::string, int> per_tag;
  for (const auto& [tags, count] : outcome.distribution) {
    for (const std::string& tag : tags) per_tag[tag] += count;
  }
  const int total = outcome.cases > 0 ? outcome.cases : 1;
  std::string text;
  for (const auto& [tag, count] : per_tag) {
    absl::StrAppendFormat(&text, "  %-40s %6d cases (%.1f%%)\n", tag, count, 100.0 * count / total);
  }
  return text;
}

}  // namespace kvcheck::properties
