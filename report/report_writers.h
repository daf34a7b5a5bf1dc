// File: report_writers.h
// The report formats of one run (run_report.h), for the places a CI job shows results:
//   report.json  the run as data (ReportToJson; a later run's --baseline reads it back),
//   report.md    a summary for a CI job summary (GitHub's $GITHUB_STEP_SUMMARY),
//   report.xml   JUnit XML: one test case per property and per defect, so CI systems list
//                them natively,
//   report.html  one self-contained page (inline CSS and SVG; no script, no network): per
//                kernel and dtype a histogram of observed error / bound, per defect the cases
//                and seconds to kill, per strategy cases and commands per second, the failures
//                with their replay files.
#ifndef KVCHECK_REPORT_REPORT_WRITERS_H_
#define KVCHECK_REPORT_REPORT_WRITERS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "report/run_report.h"

namespace kvcheck::report {

std::string ReportMarkdown(const RunReport& report);
std::string ReportJunitXml(const RunReport& report);
std::string ReportHtml(const RunReport& report);

// Writes `text` to a temporary name beside `path` and renames it: a reader never sees half a
// file.
absl::Status WriteTextFile(const std::string& path, const std::string& text);
// Creates `dir` (and its parents; an error names it) and writes each (name, text) into it.
absl::Status WriteReportSet(const std::string& dir,
                            const std::vector<std::pair<std::string, std::string>>& files);

// Creates `dir` (and its parents) and writes the four files into it.
absl::Status WriteReportFiles(const RunReport& report, const std::string& dir);

}  // namespace kvcheck::report

#endif  // KVCHECK_REPORT_REPORT_WRITERS_H_
