// File: baseline.h
// Compares a run with an earlier one (its report.json) and lists what got worse:
//   - a property that passed then and fails now;
//   - a kernel x dtype whose max observed error / bound ratio grew more than 2x (and past
//     1e-6: below that the ratio is noise of a few ulps against a loose bound);
//   - a defect killed then and not now, or killed after more than 4x the cases, or more than
//     4x the seconds when that is also a second or more slower;
//   - the suite's cases per second (over the properties both runs ran) down by more than 30%.
// Properties, kernels and defects only one of the runs has are not compared.
#ifndef KVCHECK_REPORT_BASELINE_H_
#define KVCHECK_REPORT_BASELINE_H_

#include <vector>

#include "report/run_report.h"

namespace kvcheck::report {

inline constexpr double kKernelRatioGrowth = 2.0;
inline constexpr double kKernelRatioFloor = 1e-6;
inline constexpr double kDefectSlowdown = 4.0;
inline constexpr double kDefectSlowdownFloorSeconds = 1.0;
inline constexpr double kSpeedDrop = 0.30;

std::vector<Regression> CompareWithBaseline(const RunReport& baseline, const RunReport& now);

}  // namespace kvcheck::report

#endif  // KVCHECK_REPORT_BASELINE_H_
