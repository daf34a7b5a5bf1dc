// File: defect_kill.h
// Runs the property that is expected to kill a catalogued defect, within a fixed budget of
// cases, and reports how the kill went: which property, after how many cases, how long the
// shrunk counterexample is, and how long it took. Shared by the kill test and kvcheck.
#ifndef KVCHECK_DEFECTS_DEFECT_KILL_H_
#define KVCHECK_DEFECTS_DEFECT_KILL_H_

#include <string>

#include "defects/defect_registry.h"
#include "properties/property_runner.h"

namespace kvcheck::defects {

struct KillResult {
  std::string defect;
  std::string property;        // the property that ran
  bool killed = false;
  int cases_until_failure = 0; // cases run before the failing one, plus one
  int counterexample_lines = 0;
  double find_seconds = 0;     // until the first failing case
  double seconds = 0;          // including shrinking
  bool shrink_budget_exhausted = false;
  properties::CaseEnd end = properties::CaseEnd::kNone;  // assertion, crash or timeout
  std::string message;         // the property's report (the counterexample)
  properties::PropertyOutcome outcome;  // the killing property's whole outcome (its replay)
};

// Case budgets: a defect surviving this many cases counts as not killed.
inline constexpr int kStateMachineBudget = 300;
inline constexpr int kGrowthLawBudget = 60;
inline constexpr int kKernelLawBudget = 300;
inline constexpr int kGenerationBudget = 60;
inline constexpr int kMetalKernelBudget = 300;  // the emulator's cases (metal_properties.h)

// The property that kills `defect` (state machine, growth law, kernel laws or generation laws).
// REQUIRES: defect.killer is not kPending.
properties::PropertySpec KillingProperty(const Defect& defect);

// Runs KillingProperty(defect) with `options` (progress, seed; the budget is the property's,
// and the cases always run forked: defects crash).
KillResult RunKill(const Defect& defect, const properties::RunOptions& options);

// One row of the kill table: defect, property, result (killed by assertion, crash or timeout),
// cases, counterexample lines, seconds to find, seconds including shrinking (marked "+" when
// shrinking stopped at its budget).
std::string FormatKillRow(const KillResult& result);
std::string KillTableHeader();

}  // namespace kvcheck::defects

#endif  // KVCHECK_DEFECTS_DEFECT_KILL_H_
