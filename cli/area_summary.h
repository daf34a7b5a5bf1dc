// File: area_summary.h
// The run's summary as a test runner prints it: one row per area (cache, attention, metal,
// generation, engine, other, defects) with its properties, failures, cases and the worst
// margin of what it checked (observed over allowed: a kernel's error / bound, the precision
// envelope, the growth law, the logit tolerances, the bound's tightness). The per-kernel and
// per-strategy tables behind it are `--verbose` and the HTML report.
#ifndef KVCHECK_CLI_AREA_SUMMARY_H_
#define KVCHECK_CLI_AREA_SUMMARY_H_

#include <string>
#include <vector>

#include "cli/job_result.h"
#include "defects/defect_kill.h"
#include "report/run_report.h"

namespace kvcheck::cli {

// The area of a property, from its name: "cache", "attention", "metal" (the Metal laws, named
// attention/metal_*), "generation", "engine" (an external engine's step/ and model/ laws) or
// "other" (tensor/, reference/).
std::string AreaOf(const std::string& property);

// The summary table; an area nothing ran in is left out, the defects row only when defects ran.
std::string FormatAreaSummary(const std::vector<report::PropertyResult>& properties,
                              const RecordedStats& stats,
                              const std::vector<defects::KillResult>& kills);

}  // namespace kvcheck::cli

#endif  // KVCHECK_CLI_AREA_SUMMARY_H_
