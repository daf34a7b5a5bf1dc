// File: report_builder.h
// The run's report (report/run_report.h) from what its jobs returned: property outcomes,
// defect kills, and the merged statistics.
#ifndef KVCHECK_CLI_REPORT_BUILDER_H_
#define KVCHECK_CLI_REPORT_BUILDER_H_

#include <string>
#include <vector>

#include "cli/job_result.h"
#include "report/run_report.h"

namespace kvcheck::cli {

report::PropertyResult PropertyResultOf(const properties::PropertyOutcome& outcome,
                                        int requested_cases, const std::string& failure_file);
report::DefectResult DefectResultOf(const defects::KillResult& kill,
                                    const std::string& failure_file);
// Kernel rows (kernel x dtype) of the merged statistics, with their histograms.
std::vector<report::KernelResult> KernelResultsOf(const properties::KernelStatsMap& stats);
// State machine rows: the "cache/<strategy>/<dtype>" properties with their command counts.
std::vector<report::StrategyResult> StrategyResultsOf(
    const std::vector<report::PropertyResult>& properties,
    const properties::CacheMachineStatsMap& stats);

// "assertion", "crash", "timeout".
const char* CaseEndName(properties::CaseEnd end);

}  // namespace kvcheck::cli

#endif  // KVCHECK_CLI_REPORT_BUILDER_H_
