// The suite's own speed, side by side in one run: a set of properties with a fixed number of
// cases, run with each case's check in a forked child (the default, case_isolation.h) and in
// process, and the ratio. The time a case costs decides how many cases the default kvcheck
// run can afford in its ~3 minutes.
//
//   bazel run --config=opt //bench:suite_speed_benchmark -- --cases=200 --repetitions=3
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "properties/property_runner.h"
#include "properties/suite.h"

ABSL_FLAG(int, cases, 100, "Cases per property and mode.");
ABSL_FLAG(int, repetitions, 3, "Runs per property and mode (the median is reported).");
ABSL_FLAG(std::string, properties,
          "cache/prealloc/f32,cache/ring/bf16,tensor/narrow_matches_model,"
          "attention/kernels_vs_reference,generation/prealloc",
          "Comma-separated property names.");

namespace kvcheck::properties {
namespace {

double MedianSeconds(const PropertySpec& spec, RunOptions options, int repetitions) {
  std::vector<double> seconds;
  for (int r = 0; r < repetitions; ++r) {
    const PropertyOutcome outcome = RunProperty(spec, options);
    if (!outcome.passed) {
      std::fprintf(stderr, "%s failed:\n%s\n", spec.name.c_str(), outcome.message.c_str());
    }
    seconds.push_back(outcome.seconds);
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

int Main() {
  const Suite suite = DefaultSuite();
  const int cases = absl::GetFlag(FLAGS_cases);
  const int repetitions = absl::GetFlag(FLAGS_repetitions);
  std::printf("%-40s %8s %14s %14s %8s\n", "property", "cases", "fork ms/case",
              "in-process", "ratio");
  for (const absl::string_view name : absl::StrSplit(absl::GetFlag(FLAGS_properties), ',')) {
    const PropertySpec* spec = nullptr;
    for (const PropertySpec& candidate : suite.properties) {
      if (candidate.name == name) spec = &candidate;
    }
    if (spec == nullptr) {
      std::fprintf(stderr, "no property %s\n", std::string(name).c_str());
      return 1;
    }
    RunOptions options;
    options.fixed_cases = cases;
    options.isolation.mode = Isolation::kFork;
    const double fork = MedianSeconds(*spec, options, repetitions);
    options.isolation.mode = Isolation::kInProcess;
    const double in_process = MedianSeconds(*spec, options, repetitions);
    std::printf("%-40s %8d %14.3f %14.3f %7.2fx\n", spec->name.c_str(), cases,
                1e3 * fork / cases, 1e3 * in_process / cases, fork / in_process);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace kvcheck::properties

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return kvcheck::properties::Main();
}
