// File: property_runner.h
// Runs a RapidCheck property with an explicit seed and case count, and reports the outcome
// with everything needed to replay a failure.
//
// The same property bodies run under gtest (properties/*_test.cc), in the kvcheck command
// and in the defect-kill tests, so they are plain callables (using *gen and RC_ASSERT inside)
// collected in PropertySpec lists, not RC_GTEST_PROP functions.
//
// Each case's check runs in a forked child by default (case_isolation.h): a crash or hang of
// the code under test is a failing case, shrunk like any other. Shrinking is bounded
// (property_driver.h): the outcome says when it stopped at its budget.
//
// Replay: a failure message names the property, the seed and a RapidCheck reproduce string;
// KVCHECK_SEED=<seed> reruns the same cases, KVCHECK_REPRODUCE=<string> jumps straight to
// the shrunk counterexample (kvcheck takes --seed and --reproduce).
#ifndef KVCHECK_PROPERTIES_PROPERTY_RUNNER_H_
#define KVCHECK_PROPERTIES_PROPERTY_RUNNER_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "properties/case_isolation.h"
#include "properties/property_driver.h"

namespace kvcheck::properties {

// A named property body with its default number of cases.
struct PropertySpec {
  std::string name;  // "tensor/narrow_cat_round_trip"
  int default_cases = 100;
  std::function<void()> body;
  int max_size = 100;  // RapidCheck's size ramp ends here (e.g. caps command sequences)
  // What it exercises, for the command's selection (--strategy, --kernel, --dtype): the
  // strategies and kernels it runs (empty: none), and its one dtype (empty: any or none).
  // SuiteFor fills these in for the suite's properties (suite.h).
  std::vector<std::string> strategies = {};
  std::vector<std::string> kernels = {};
  std::string dtype = {};
};

// gtest prints a parameterised test's parameter with this.
inline void PrintTo(const PropertySpec& spec, std::ostream* os) { *os << spec.name; }

struct RunOptions {
  uint64_t seed = 20261129;   // fixed default: CI runs are deterministic
  double case_scale = 1.0;    // multiplies each property's default case count
  std::string reproduce;      // RapidCheck "reproduce=..." string, or empty
  int max_cases = 0;          // if > 0, caps the case count (quick runs)
  int fixed_cases = 0;        // if > 0, every property runs exactly this many cases
  IsolationOptions isolation;  // fork per case (default) or in process; the case timeout
  double shrink_seconds = 20;  // shrinking stops after this long ...
  int shrink_attempts = 2000;  // ... or this many candidates, with the smallest case so far
  // Called after every case and every shrink attempt.
  std::function<void(const DriverProgress&)> progress;
  // Generation of a property's cases stops at this time (a failure found before it is still
  // shrunk); the outcome says so. Unset: every case runs.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  // Flags the replay lines add to the kvcheck command ("--engine=...": what was checked).
  std::string replay_flags;
};

// RunOptions from the environment: KVCHECK_SEED, KVCHECK_CASE_SCALE, KVCHECK_REPRODUCE,
// KVCHECK_ISOLATION (fork | none), KVCHECK_CASE_TIMEOUT (seconds), KVCHECK_SHRINK_SECONDS,
// KVCHECK_SHRINK_ATTEMPTS, and KVCHECK_ORACLE (dd | real: sets the reference's default
// number type, reference_attention.h).
RunOptions RunOptionsFromEnvironment();

struct PropertyOutcome {
  std::string name;
  bool passed = false;
  int cases = 0;               // successful cases run
  double seconds = 0;          // the whole run, shrinking included
  double search_seconds = 0;   // until the first failing case (the whole run if it passed)
  std::string message;         // the report; on failure the shrunk counterexample
  std::string replay;          // on failure: how to replay it
  int counterexample_lines = 0;  // on failure: lines of the shrunk counterexample (commands)
  CaseEnd end = CaseEnd::kNone;  // on failure: assertion (kNone), crash or timeout
  int shrink_attempts = 0;
  int shrinks_accepted = 0;
  bool shrink_budget_exhausted = false;  // shrinking stopped at the budget, not at a minimum
  bool stopped_at_deadline = false;  // fewer cases than asked: RunOptions::deadline came first
  uint64_t seed = 0;                 // the base seed of the run
  std::string reproduce;             // on failure: RapidCheck's reproduce string for the case
  std::string counterexample;        // on failure: the shrunk case, as RapidCheck shows it
  // RunOptions::reproduce named a case that passes now (not a pass of the property: the
  // property ran one case; counterexample shows it).
  bool reproduced_case_passes = false;
  std::string description;           // on failure: what went wrong (the values that diverged)
  std::map<std::vector<std::string>, int> distribution;  // RC_CLASSIFY / RC_TAG counts
};

// The number of cases `spec` runs under `options`.
int CasesFor(const PropertySpec& spec, const RunOptions& options);

PropertyOutcome RunProperty(const PropertySpec& spec, const RunOptions& options);

// One line per RC_TAG / RC_CLASSIFY label: how many cases carried it.
std::string FormatDistribution(const PropertyOutcome& outcome);

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_PROPERTY_RUNNER_H_
