// File: fuzz_campaign.h
// A fuzzing campaign's summary (tools/fuzz.sh): per target, the executions and their rate,
// coverage at the start and the end, the inputs the corpus gained, and the crashes with the
// regression files they were minimised into; in the run reports' four formats
// (fuzz-report.json / .md / .xml / .html). fuzz.sh writes one tab-separated line per target
// and round (the columns of FuzzRound, in order; regression files comma-separated), and
// //report:fuzz_campaign_report turns the lines into the reports.
#ifndef KVCHECK_REPORT_FUZZ_CAMPAIGN_H_
#define KVCHECK_REPORT_FUZZ_CAMPAIGN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "report/run_report.h"

namespace kvcheck::report {

struct FuzzRound {
  std::string target;
  int round = 0;
  double seconds = 0;
  int64_t execs = 0;
  int64_t coverage_start = 0;  // libFuzzer's cov: (edges) after loading the corpus
  int64_t coverage_end = 0;
  int64_t corpus_before = 0;   // files in fuzz/corpus/<target>/
  int64_t corpus_after = 0;    // after merging the round's new inputs
  int crashes = 0;
  std::vector<std::string> regression_files;  // where the crashes were minimised to
};

// Per target, over its rounds.
struct FuzzTargetSummary {
  std::string target;
  int rounds = 0;
  double seconds = 0;
  int64_t execs = 0;
  int64_t coverage_start = 0;  // of the first round
  int64_t coverage_end = 0;    // of the last
  int64_t new_corpus_files = 0;
  int crashes = 0;
  std::vector<std::string> regression_files;
  double ExecsPerSecond() const { return seconds > 0 ? execs / seconds : 0; }
};

struct FuzzCampaign {
  std::string started;  // UTC, ISO 8601
  Machine machine;
  std::string defect;   // KVCHECK_FUZZ_DEFECT, when the campaign fuzzed a defect
  std::vector<FuzzRound> rounds;
  std::vector<FuzzTargetSummary> Summaries() const;  // in the order targets first appear
};

// The lines fuzz.sh writes; errors name the line and the column.
absl::StatusOr<std::vector<FuzzRound>> ParseFuzzRounds(const std::string& text);

std::string FuzzCampaignJson(const FuzzCampaign& campaign);
std::string FuzzCampaignMarkdown(const FuzzCampaign& campaign);
std::string FuzzCampaignJunitXml(const FuzzCampaign& campaign);
std::string FuzzCampaignHtml(const FuzzCampaign& campaign);
// Writes fuzz-report.json, .md, .xml and .html into `dir` (created if needed).
absl::Status WriteFuzzCampaignFiles(const FuzzCampaign& campaign, const std::string& dir);

}  // namespace kvcheck::report

#endif  // KVCHECK_REPORT_FUZZ_CAMPAIGN_H_
