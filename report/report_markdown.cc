// report.md: what a CI job summary shows first (the verdict, regressions, failures), then the
// tables. GitHub renders it as-is from $GITHUB_STEP_SUMMARY.
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "report/report_writers.h"

namespace kvcheck::report {
namespace {

// A table cell: pipes and newlines would break the row.
std::string Cell(const std::string& text) {
  return absl::StrReplaceAll(text, {{"|", "\\|"}, {"\n", " "}});
}

std::string Verdict(const RunReport& r) {
  if (r.exit_code == 1) return "FAILED";
  if (r.exit_code == 2) return "REGRESSED against the baseline";
  return "PASSED";
}

}  // namespace

std::string ReportMarkdown(const RunReport& r) {
  std::string md = absl::StrCat("# kvcheck: ", Verdict(r), "\n\n");
  absl::StrAppend(&md, SummaryLine(r), "\n\n");
  absl::StrAppendFormat(&md, "Subject `%s`, seed %d, oracle %s, %d workers; %s (%s, %d cores); "
                        "started %s.\n\n",
                        r.subject, r.seed, r.oracle, r.threads, r.machine.cpu,
                        r.machine.simd_target, r.machine.cores, r.started);
  if (!r.baseline.empty()) {
    absl::StrAppend(&md, "## Against the baseline `", Cell(r.baseline), "`\n\n");
    if (r.regressions.empty()) absl::StrAppend(&md, "No regressions.\n\n");
    for (const Regression& g : r.regressions) {
      absl::StrAppend(&md, "- **", g.kind, "** `", g.name, "`: ", Cell(g.detail), "\n");
    }
    if (!r.regressions.empty()) absl::StrAppend(&md, "\n");
  }
  bool failures = false;
  for (const PropertyResult& p : r.properties) {
    if (p.status != PropertyStatus::kFailed) continue;
    if (!failures) absl::StrAppend(&md, "## Failures\n\n");
    failures = true;
    absl::StrAppend(&md, "### `", p.name, "` (", p.ended, ")\n\n");
    if (!p.failure_file.empty()) {
      absl::StrAppend(&md, "Replay: `kvcheck replay ", p.failure_file, "`\n\n");
    }
    absl::StrAppend(&md, "```\n", p.message, "\n```\n\n");
  }
  absl::StrAppend(&md, "## Properties\n\n| property | result | cases | seconds |\n|---|---|--:|--:|\n");
  for (const PropertyResult& p : r.properties) {
    absl::StrAppendFormat(&md, "| `%s` | %s%s | %d | %.2f |\n", p.name,
                          PropertyStatusName(p.status),
                          p.stopped_at_time_limit ? " (time limit)" : "", p.cases, p.seconds);
  }
  if (!r.kernels.empty()) {
    absl::StrAppend(&md, "\n## Attention kernels against the reference\n\n"
                         "| kernel | dtype | cases | max error/bound | median |\n|---|---|--:|--:|--:|\n");
    for (const KernelResult& k : r.kernels) {
      absl::StrAppendFormat(&md, "| %s | %s | %d | %.3g | %.3g |\n", k.kernel, k.dtype, k.cases,
                            k.max_ratio, k.median_ratio);
    }
  }
  if (!r.defects.empty()) {
    absl::StrAppend(&md, "\n## Defect catalogue\n\n"
                         "| defect | killed by | result | cases | seconds |\n|---|---|---|--:|--:|\n");
    for (const DefectResult& d : r.defects) {
      absl::StrAppendFormat(&md, "| %s | `%s` | %s | %d | %.2f |\n", d.name, d.property,
                            d.killed ? absl::StrCat("killed (", d.ended, ")") : "**SURVIVED**",
                            d.cases, d.find_seconds);
    }
  }
  return md;
}

}  // namespace kvcheck::report
