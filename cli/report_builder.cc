#include "cli/report_builder.h"

#include "absl/strings/str_split.h"

namespace kvcheck::cli {

const char* CaseEndName(properties::CaseEnd end) {
  switch (end) {
    case properties::CaseEnd::kCrash:
      return "crash";
    case properties::CaseEnd::kTimeout:
      return "timeout";
    case properties::CaseEnd::kNone:
      break;
  }
  return "assertion";
}

report::PropertyResult PropertyResultOf(const properties::PropertyOutcome& o, int requested_cases,
                                        const std::string& failure_file) {
  report::PropertyResult p;
  p.name = o.name;
  p.status = o.passed ? report::PropertyStatus::kPassed : report::PropertyStatus::kFailed;
  // Cases run: a failed property's failing case counts too ("Falsifiable after N cases").
  p.cases = o.cases + (o.passed ? 0 : 1);
  p.requested_cases = requested_cases;
  p.seconds = o.seconds;
  p.search_seconds = o.search_seconds;
  p.stopped_at_time_limit = o.stopped_at_deadline;
  p.shrink_attempts = o.shrink_attempts;
  p.shrinks = o.shrinks_accepted;
  p.shrink_budget_exhausted = o.shrink_budget_exhausted;
  if (!o.passed) {
    p.ended = CaseEndName(o.end);
    p.message = o.message;
    p.failure_file = failure_file;
  }
  return p;
}

report::DefectResult DefectResultOf(const defects::KillResult& k, const std::string& failure_file) {
  report::DefectResult d;
  d.name = k.defect;
  d.property = k.property;
  d.killed = k.killed;
  d.ended = k.killed ? CaseEndName(k.end) : "";
  d.cases = k.cases_until_failure;
  d.counterexample_lines = k.counterexample_lines;
  d.find_seconds = k.find_seconds;
  d.seconds = k.seconds;
  d.failure_file = failure_file;
  return d;
}

std::vector<report::KernelResult> KernelResultsOf(const properties::KernelStatsMap& stats) {
  std::vector<report::KernelResult> rows;
  for (const auto& [key, s] : stats) {
    report::KernelResult k;
    k.kernel = key.first;
    k.dtype = key.second;
    k.cases = s.cases;
    k.elements = s.ratios.count();
    k.unchecked = s.unchecked;
    k.hull_bounded = s.hull_bounded;
    k.max_ratio = s.ratios.Max();
    k.median_ratio = s.ratios.Median();
    k.histogram = report::RatioHistogram(s.ratios.values());
    rows.push_back(std::move(k));
  }
  return rows;
}

std::vector<report::StrategyResult> StrategyResultsOf(
    const std::vector<report::PropertyResult>& properties,
    const properties::CacheMachineStatsMap& stats) {
  std::vector<report::StrategyResult> rows;
  for (const report::PropertyResult& p : properties) {
    const auto found = stats.find(p.name);
    if (found == stats.end()) continue;
    // Names are "cache/<strategy>/<dtype>".
    const std::vector<std::string> parts = absl::StrSplit(p.name, '/');
    if (parts.size() != 3) continue;
    rows.push_back({parts[1], parts[2], p.cases, found->second.commands, p.seconds,
                    p.status == report::PropertyStatus::kPassed});
  }
  return rows;
}

}  // namespace kvcheck::cli
