// File: run_report.h
// What one kvcheck run found, as data: the properties and their outcomes, the attention
// kernels' observed error / bound ratios, the cache state machines' throughput, the defect
// catalogue's kills, and the machine it ran on. The four report formats (report_writers.h)
// and the baseline comparison (baseline.h) read it; report.json is its serialised form
// (schema in docs/ci-and-reports.md, versioned by kReportSchemaVersion), so a later run can read an
// earlier one back.
#ifndef KVCHECK_REPORT_RUN_REPORT_H_
#define KVCHECK_REPORT_RUN_REPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace kvcheck::report {

// Bumped whenever a field changes meaning or disappears (adding a field does not bump it).
inline constexpr int kReportSchemaVersion = 1;

// Observed error / bound in decades: bin 0 counts ratios below 1e-8, bin i (1..8) those in
// [10^(i-9), 10^(i-8)), bin 9 those >= 1 (a bound violation where the law checks the bound).
inline constexpr int kRatioHistogramBins = 10;
std::vector<int64_t> RatioHistogram(absl::Span<const double> ratios);
// "< 1e-8", "1e-8..1e-7", ..., ">= 1": the label of bin `bin`.
std::string RatioHistogramLabel(int bin);

struct Machine {
  std::string cpu;          // /proc/cpuinfo's model name
  std::string simd_target;  // the Highway target the kernels dispatch to
  int cores = 0;            // online CPUs
};

enum class PropertyStatus { kPassed, kFailed, kNotRun };
const char* PropertyStatusName(PropertyStatus status);  // "passed", "failed", "not_run"

struct PropertyResult {
  std::string name;  // "cache/ring/f16"
  PropertyStatus status = PropertyStatus::kNotRun;
  int cases = 0;            // successful cases
  int requested_cases = 0;  // the budget
  double seconds = 0;
  double search_seconds = 0;      // until the first failing case
  bool stopped_at_time_limit = false;
  int shrink_attempts = 0;
  int shrinks = 0;                // shrink candidates that still failed
  bool shrink_budget_exhausted = false;
  std::string ended;              // on failure: "assertion", "crash" or "timeout"
  std::string message;            // on failure: the counterexample and what diverged
  std::string failure_file;       // on failure: the replay file written for it
};

// One kernel x dtype row: the ratios every kernel law observed for it.
struct KernelResult {
  std::string kernel;
  std::string dtype;
  int64_t cases = 0;
  int64_t elements = 0;      // ratios recorded
  int64_t unchecked = 0;     // elements outside the bound's no-overflow regime
  int64_t hull_bounded = 0;  // elements checked against the convex-hull bound
  double max_ratio = 0;
  double median_ratio = 0;
  std::vector<int64_t> histogram;  // RatioHistogram of the ratios
};

struct StrategyResult {
  std::string strategy;
  std::string dtype;
  int cases = 0;
  int64_t commands = 0;  // commands executed in successful sequences
  double seconds = 0;
  bool passed = false;
};

struct DefectResult {
  std::string name;
  std::string property;  // the property expected to kill it
  bool killed = false;
  std::string ended;     // how the killing case ended: assertion, crash, timeout
  int cases = 0;         // cases until the failing one (that one included)
  int counterexample_lines = 0;
  double find_seconds = 0;
  double seconds = 0;    // shrinking included
  std::string failure_file;  // the replay file of the kill, when one was written
};

// A difference from the baseline run that counts as a regression (baseline.h).
struct Regression {
  std::string kind;    // "property", "kernel", "defect", "speed"
  std::string name;    // what regressed
  std::string detail;  // before and after, in words
};

struct RunReport {
  int schema_version = kReportSchemaVersion;
  std::string started;       // UTC, ISO 8601
  std::string command_line;  // as typed
  std::string subject;       // "kvcheck" or the external engine's name
  uint64_t seed = 0;
  std::string oracle;        // "double-double" or "50-digit"
  int threads = 1;
  Machine machine;
  double seconds = 0;        // the whole run
  std::vector<PropertyResult> properties;
  std::vector<KernelResult> kernels;   // against the reference
  std::vector<KernelResult> envelope;  // against the straightforward f32 baseline
  std::vector<StrategyResult> strategies;
  std::vector<DefectResult> defects;
  // Filled when the run was compared with a baseline (--baseline).
  std::string baseline;  // the baseline file
  std::vector<Regression> regressions;
  int exit_code = 0;     // 0 all good, 1 failures, 2 regressions against the baseline

  // Successful cases over the seconds of the properties that ran (the suite's speed).
  int64_t TotalCases() const;
  double PropertySeconds() const;
  int Failed() const;           // properties that failed
  int DefectsSurvived() const;  // catalogued defects not killed
};

// "3 properties, 1 failed; 420 cases in 12.5 s; 2 of 2 defects killed" (counts that are 0
// or that do not apply are left out).
std::string SummaryLine(const RunReport& report);

// The machine this process runs on.
Machine ThisMachine();

// report.json and back. Parsing checks the schema version and every field's type: a file
// that is not a kvcheck report gets an error naming what is wrong.
std::string ReportToJson(const RunReport& report);
absl::StatusOr<RunReport> ReportFromJson(const std::string& text);

}  // namespace kvcheck::report

#endif  // KVCHECK_REPORT_RUN_REPORT_H_
