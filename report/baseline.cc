#include "report/baseline.h"

#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kvcheck::report {
namespace {

template <typename T, typename Key>
std::map<std::string, const T*> ByName(const std::vector<T>& rows, Key key) {
  std::map<std::string, const T*> index;
  for (const T& row : rows) index[key(row)] = &row;
  return index;
}

}  // namespace

std::vector<Regression> CompareWithBaseline(const RunReport& baseline, const RunReport& now) {
  std::vector<Regression> regressions;
  const auto before_properties =
      ByName(baseline.properties, [](const PropertyResult& p) { return p.name; });
  int64_t cases_before = 0, cases_now = 0;
  double seconds_before = 0, seconds_now = 0;
  for (const PropertyResult& p : now.properties) {
    const auto found = before_properties.find(p.name);
    if (found == before_properties.end()) continue;
    const PropertyResult& before = *found->second;
    if (before.status == PropertyStatus::kPassed && p.status == PropertyStatus::kFailed) {
      regressions.push_back({"property", p.name,
                             absl::StrCat("passed in the baseline (", before.cases,
                                          " cases), fails now (", p.ended, ")")});
    }
    if (before.status != PropertyStatus::kNotRun && p.status != PropertyStatus::kNotRun) {
      cases_before += before.cases;
      seconds_before += before.seconds;
      cases_now += p.cases;
      seconds_now += p.seconds;
    }
  }

  const auto kernel_key = [](const KernelResult& k) { return absl::StrCat(k.kernel, " ", k.dtype); };
  const auto before_kernels = ByName(baseline.kernels, kernel_key);
  for (const KernelResult& k : now.kernels) {
    const auto found = before_kernels.find(kernel_key(k));
    if (found == before_kernels.end()) continue;
    const double before = found->second->max_ratio;
    if (k.max_ratio > kKernelRatioFloor && k.max_ratio > kKernelRatioGrowth * before) {
      regressions.push_back(
          {"kernel", kernel_key(k),
           absl::StrFormat("max error/bound %.3g, was %.3g (%.1fx; more than %gx is a regression)",
                           k.max_ratio, before, before > 0 ? k.max_ratio / before : INFINITY,
                           kKernelRatioGrowth)});
    }
  }

  const auto before_defects = ByName(baseline.defects, [](const DefectResult& d) { return d.name; });
  for (const DefectResult& d : now.defects) {
    const auto found = before_defects.find(d.name);
    if (found == before_defects.end() || !found->second->killed) continue;
    const DefectResult& before = *found->second;
    if (!d.killed) {
      regressions.push_back({"defect", d.name,
                             absl::StrCat("killed in the baseline after ", before.cases,
                                          " cases; survived ", d.cases, " cases now")});
    } else if (d.cases > kDefectSlowdown * before.cases) {
      regressions.push_back({"defect", d.name,
                             absl::StrFormat("killed after %d cases, was %d (more than %gx)",
                                             d.cases, before.cases, kDefectSlowdown)});
    } else if (d.find_seconds > kDefectSlowdown * before.find_seconds &&
               d.find_seconds - before.find_seconds >= kDefectSlowdownFloorSeconds) {
      regressions.push_back({"defect", d.name,
                             absl::StrFormat("killed in %.2f s, was %.2f s (more than %gx)",
                                             d.find_seconds, before.find_seconds,
                                             kDefectSlowdown)});
    }
  }

  if (seconds_before > 0 && seconds_now > 0 && cases_before > 0) {
    const double rate_before = cases_before / seconds_before;
    const double rate_now = cases_now / seconds_now;
    if (rate_now < (1 - kSpeedDrop) * rate_before) {
      regressions.push_back(
          {"speed", "suite",
           absl::StrFormat("%.0f cases/s over the properties both runs ran, was %.0f (down "
                           "%.0f%%; more than %.0f%% is a regression)",
                           rate_now, rate_before, 100 * (1 - rate_now / rate_before),
                           100 * kSpeedDrop)});
    }
  }
  return regressions;
}

}  // namespace kvcheck::report
