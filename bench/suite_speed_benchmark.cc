// The suite's own speed, side by side in one run: a set of properties with a fixed number of
// cases, run (1) with each case's check in a forked child (the default, case_isolation.h),
// (2) in process, both with the double-double oracle (the default), and (3) in process with
// the 50-digit Real oracle; then the fork overhead (1 / 2) and the oracle speed-up (3 / 2).
// The time a case costs decides how many cases the default kvcheck run affords in ~3 minutes.
//
//   bazel run --config=opt //bench:suite_speed_benchmark -- --cases=200 --repetitions=3
#include <cblas.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "bench/machine_context.h"
#include "properties/property_runner.h"
#include "properties/suite.h"
#include "reference/reference_attention.h"

ABSL_FLAG(int, cases, 100, "Cases per property and mode.");
ABSL_FLAG(int, repetitions, 3, "Runs per property and mode (the median is reported).");
ABSL_FLAG(std::string, properties,
          "reference/bound_is_sound,cache/prealloc/f32,cache/ring/bf16,"
          "tensor/narrow_matches_model,attention/kernels_vs_reference,"
          "attention/decode_equals_prefill_last_row,generation/prealloc",
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
  // The machine first (CPU, SIMD target, cores, one core's FMA peak), as every benchmark's
  // output starts.
  for (const auto& [name, value] : bench::MachineContextLines(/*read_bandwidth=*/false)) {
    std::printf("%s: %s\n", name.c_str(), value.c_str());
  }
  std::printf("%-40s %6s %13s %13s %13s %9s %9s\n", "property", "cases", "fork ms/case",
              "in-process", "Real oracle", "fork", "oracle");
  std::vector<const PropertySpec*> specs;
  for (const absl::string_view name : absl::StrSplit(absl::GetFlag(FLAGS_properties), ',')) {
    const PropertySpec* spec = nullptr;
    for (const PropertySpec& candidate : suite.properties) {
      if (candidate.name == name) spec = &candidate;
    }
    if (spec == nullptr) {
      std::fprintf(stderr, "no property %s\n", std::string(name).c_str());
      return 1;
    }
    specs.push_back(spec);
  }
  // One mode at a time over every property, forked first: in-process runs grow this process's
  // heap, which would make the forks measured after them dearer than kvcheck's are.
  RunOptions options;
  options.fixed_cases = cases;
  std::vector<double> fork, in_process, real;
  options.isolation.mode = Isolation::kFork;
  reference::SetDefaultOracle(reference::Oracle::kDoubleDouble);
  for (const PropertySpec* spec : specs) fork.push_back(MedianSeconds(*spec, options, repetitions));
  options.isolation.mode = Isolation::kInProcess;
  for (const PropertySpec* spec : specs) {
    in_process.push_back(MedianSeconds(*spec, options, repetitions));
  }
  reference::SetDefaultOracle(reference::Oracle::kReal);
  for (const PropertySpec* spec : specs) real.push_back(MedianSeconds(*spec, options, repetitions));
  reference::SetDefaultOracle(reference::Oracle::kDoubleDouble);
  for (size_t i = 0; i < specs.size(); ++i) {
    std::printf("%-40s %6d %13.3f %13.3f %13.3f %8.2fx %8.2fx\n", specs[i]->name.c_str(), cases,
                1e3 * fork[i] / cases, 1e3 * in_process[i] / cases, 1e3 * real[i] / cases,
                fork[i] / in_process[i], real[i] / in_process[i]);
  }
  return 0;
}

}  // namespace
}  // namespace kvcheck::properties

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  openblas_set_num_threads(1);  // as kvcheck runs the suite (cli/kvcheck_main.cc)
  return kvcheck::properties::Main();
}
