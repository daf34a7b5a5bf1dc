#include "properties/property_runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <unordered_map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "rapidcheck.h"
#include "rapidcheck/detail/Configuration.h"
#include "rapidcheck/detail/TestListener.h"

namespace kvcheck::properties {
namespace {

// A per-property seed, so that properties run with the same base seed do not share streams.
uint64_t PropertySeed(uint64_t base, const std::string& name) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return base ^ h;
}

// Forwards RapidCheck's per-case events to RunOptions::progress.
class ProgressListener : public rc::detail::TestListener {
 public:
  explicit ProgressListener(const std::function<void(int, int)>& progress) : progress_(progress) {}
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {
    if (progress_) progress_(++cases_, shrinks_);
  }
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {
    if (progress_) progress_(cases_, ++shrinks_);
  }
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}

 private:
  const std::function<void(int, int)>& progress_;
  int cases_ = 0;
  int shrinks_ = 0;
};

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
  return options;
}

int CasesFor(const PropertySpec& spec, const RunOptions& options) {
  if (options.fixed_cases > 0) return options.fixed_cases;
  int cases = static_cast<int>(std::lround(spec.default_cases * options.case_scale));
  if (options.max_cases > 0 && cases > options.max_cases) cases = options.max_cases;
  return cases < 1 ? 1 : cases;
}

PropertyOutcome RunProperty(const PropertySpec& spec, const RunOptions& options) {
  using namespace rc::detail;
  PropertyOutcome outcome;
  outcome.name = spec.name;
  TestMetadata metadata;
  metadata.id = spec.name;
  metadata.description = spec.name;
  TestParams params;
  params.seed = PropertySeed(options.seed, spec.name);
  params.maxSuccess = CasesFor(spec, options);
  params.maxSize = spec.max_size;
  std::unordered_map<std::string, Reproduce> reproduce_map;
  if (!options.reproduce.empty()) {
    reproduce_map = configFromString(options.reproduce).reproduce;
  }
  ProgressListener listener(options.progress);
  const auto start = std::chrono::steady_clock::now();
  const TestResult result =
      checkProperty(toProperty(spec.body), metadata, params, listener, reproduce_map);
  outcome.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ostringstream message;
  printResultMessage(result, message);
  outcome.message = message.str();
  if (result.is<SuccessResult>()) {
    const SuccessResult& success = result.get<SuccessResult>();
    outcome.passed = true;
    outcome.cases = success.numSuccess;
    outcome.distribution = success.distribution;
  } else if (result.is<FailureResult>()) {
    const FailureResult& failure = result.get<FailureResult>();
    outcome.cases = failure.numSuccess;
    for (const auto& [type, value] : failure.counterExample) {
      outcome.counterexample_lines += 1 + static_cast<int>(std::count(value.begin(), value.end(), '\n'));
    }
    Configuration config;
    config.testParams.seed = params.seed;
    config.reproduce[spec.name] = failure.reproduce;
    const std::string reproduce = configToMinimalString(config);
    outcome.replay = absl::StrCat(
        "replay: kvcheck --seed=", options.seed, " --only=", spec.name,
        " (tests: KVCHECK_SEED=", options.seed, "); jump straight to the shrunk case with "
        "kvcheck --only=", spec.name, " --reproduce='", reproduce, "' (tests: KVCHECK_REPRODUCE='",
        reproduce, "')");
  } else if (result.is<GaveUpResult>()) {
    outcome.cases = result.get<GaveUpResult>().numSuccess;
  }
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
