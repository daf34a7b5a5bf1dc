#include "report/fuzz_campaign.h"

#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"
#include "report/html_parts.h"
#include "report/markup.h"
#include "report/report_writers.h"

namespace kvcheck::report {
namespace {

constexpr int kColumns = 10;

template <typename T>
bool ParseNumber(absl::string_view text, T* value) {
  if constexpr (std::is_floating_point_v<T>) {
    return absl::SimpleAtod(text, value) && *value >= 0;
  } else {
    return absl::SimpleAtoi(text, value) && *value >= 0;
  }
}

}  // namespace

std::vector<FuzzTargetSummary> FuzzCampaign::Summaries() const {
  std::vector<FuzzTargetSummary> summaries;
  std::map<std::string, size_t> index;
  for (const FuzzRound& r : rounds) {
    auto [at, added] = index.emplace(r.target, summaries.size());
    if (added) {
      summaries.push_back({});
      summaries.back().target = r.target;
      summaries.back().coverage_start = r.coverage_start;
    }
    FuzzTargetSummary& s = summaries[at->second];
    if (added) s.new_corpus_files = 0;
    ++s.rounds;
    s.seconds += r.seconds;
    s.execs += r.execs;
    s.coverage_end = r.coverage_end;
    s.new_corpus_files += r.corpus_after - r.corpus_before;
    s.crashes += r.crashes;
    s.regression_files.insert(s.regression_files.end(), r.regression_files.begin(),
                              r.regression_files.end());
  }
  return summaries;
}

absl::StatusOr<std::vector<FuzzRound>> ParseFuzzRounds(const std::string& text) {
  std::vector<FuzzRound> rounds;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    ++number;
    const std::vector<absl::string_view> cells = absl::StrSplit(line, '\t');
    if (cells.size() != kColumns) {
      return absl::InvalidArgumentError(absl::StrCat("line ", number, ": ", cells.size(),
                                                     " columns, expected ", kColumns));
    }
    FuzzRound r;
    r.target = std::string(cells[0]);
    bool ok = !r.target.empty();
    int column = 1;
    const auto check = [&](bool parsed) {
      if (ok && !parsed) ok = false;
      if (ok) ++column;
    };
    check(ParseNumber(cells[1], &r.round));
    check(ParseNumber(cells[2], &r.seconds));
    check(ParseNumber(cells[3], &r.execs));
    check(ParseNumber(cells[4], &r.coverage_start));
    check(ParseNumber(cells[5], &r.coverage_end));
    check(ParseNumber(cells[6], &r.corpus_before));
    check(ParseNumber(cells[7], &r.corpus_after));
    check(ParseNumber(cells[8], &r.crashes));
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", number, ", column ", column + 1, ": '",
                       column < static_cast<int>(cells.size()) ? cells[column] : "",
                       "' is not a non-negative number"));
    }
    for (absl::string_view file : absl::StrSplit(cells[9], ',', absl::SkipEmpty())) {
      r.regression_files.emplace_back(file);
    }
    rounds.push_back(std::move(r));
  }
  return rounds;
}

std::string FuzzCampaignJson(const FuzzCampaign& c) {
  nlohmann::ordered_json json;
  json["schema"] = "kvcheck-fuzz-report";
  json["schema_version"] = 1;
  json["started"] = c.started;
  json["machine"] = {{"cpu", c.machine.cpu},
                     {"simd_target", c.machine.simd_target},
                     {"cores", c.machine.cores}};
  json["defect"] = c.defect;
  nlohmann::ordered_json& targets = json["targets"] = nlohmann::ordered_json::array();
  for (const FuzzTargetSummary& s : c.Summaries()) {
    targets.push_back({{"target", s.target},
                       {"rounds", s.rounds},
                       {"seconds", s.seconds},
                       {"execs", s.execs},
                       {"execs_per_second", s.ExecsPerSecond()},
                       {"coverage_start", s.coverage_start},
                       {"coverage_end", s.coverage_end},
                       {"new_corpus_files", s.new_corpus_files},
                       {"crashes", s.crashes},
                       {"regression_files", s.regression_files}});
  }
  nlohmann::ordered_json& rounds = json["rounds"] = nlohmann::ordered_json::array();
  for (const FuzzRound& r : c.rounds) {
    rounds.push_back({{"target", r.target},
                      {"round", r.round},
                      {"seconds", r.seconds},
                      {"execs", r.execs},
                      {"coverage_start", r.coverage_start},
                      {"coverage_end", r.coverage_end},
                      {"corpus_before", r.corpus_before},
                      {"corpus_after", r.corpus_after},
                      {"crashes", r.crashes},
                      {"regression_files", r.regression_files}});
  }
  return json.dump(1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

std::string FuzzCampaignMarkdown(const FuzzCampaign& c) {
  int crashes = 0;
  const std::vector<FuzzTargetSummary> summaries = c.Summaries();
  for (const FuzzTargetSummary& s : summaries) crashes += s.crashes;
  std::string md = absl::StrCat("# kvcheck fuzzing: ", crashes == 0 ? "no crashes" : "CRASHES",
                                c.defect.empty() ? "" : absl::StrCat(" (defect ", c.defect, ")"),
                                "\n\n");
  absl::StrAppendFormat(&md, "%s (%s, %d cores); started %s.\n\n", c.machine.cpu,
                        c.machine.simd_target, c.machine.cores, c.started);
  md += "| target | rounds | seconds | execs | execs/s | coverage | new corpus files | crashes |\n"
        "|---|--:|--:|--:|--:|--:|--:|--:|\n";
  for (const FuzzTargetSummary& s : summaries) {
    absl::StrAppendFormat(&md, "| %s | %d | %.0f | %d | %.0f | %d -> %d (+%d) | %d | %d |\n",
                          s.target, s.rounds, s.seconds, s.execs, s.ExecsPerSecond(),
                          s.coverage_start, s.coverage_end, s.coverage_end - s.coverage_start,
                          s.new_corpus_files, s.crashes);
  }
  for (const FuzzTargetSummary& s : summaries) {
    for (const std::string& file : s.regression_files) {
      absl::StrAppend(&md, "\n- `", s.target, "` crashed: `", file, "` (replay: `bazel run //fuzz:",
                      s.target, "_fuzzer -- $PWD/", file, "`)");
    }
  }
  return md + "\n";
}

std::string FuzzCampaignJunitXml(const FuzzCampaign& c) {
  const std::vector<FuzzTargetSummary> summaries = c.Summaries();
  int crashed = 0;
  double seconds = 0;
  for (const FuzzTargetSummary& s : summaries) {
    crashed += s.crashes > 0;
    seconds += s.seconds;
  }
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  absl::StrAppendFormat(&xml,
                        "<testsuites name=\"kvcheck-fuzz\" tests=\"%d\" failures=\"%d\" "
                        "time=\"%.3f\">\n  <testsuite name=\"fuzz\" tests=\"%d\" failures=\"%d\" "
                        "time=\"%.3f\" timestamp=\"%s\">\n",
                        static_cast<int>(summaries.size()), crashed, seconds,
                        static_cast<int>(summaries.size()), crashed, seconds, E(c.started));
  for (const FuzzTargetSummary& s : summaries) {
    absl::StrAppendFormat(&xml, "    <testcase classname=\"fuzz\" name=\"%s\" time=\"%.3f\">",
                          E(s.target), s.seconds);
    if (s.crashes > 0) {
      absl::StrAppendFormat(&xml, "<failure message=\"%s\" type=\"crash\">%s</failure>",
                            E(absl::StrCat(s.crashes, " crashes")),
                            E(absl::StrJoin(s.regression_files, "\n")));
    } else {
      absl::StrAppendFormat(&xml, "<system-out>%d execs, %.0f/s, coverage %d -> %d</system-out>",
                            s.execs, s.ExecsPerSecond(), s.coverage_start, s.coverage_end);
    }
    xml += "</testcase>\n";
  }
  xml += "  </testsuite>\n</testsuites>\n";
  return xml;
}

std::string FuzzCampaignHtml(const FuzzCampaign& c) {
  const std::vector<FuzzTargetSummary> summaries = c.Summaries();
  std::vector<std::pair<std::string, double>> rates, growth;
  int crashes = 0;
  for (const FuzzTargetSummary& s : summaries) {
    rates.push_back({s.target, s.ExecsPerSecond()});
    growth.push_back({s.target, static_cast<double>(s.coverage_end - s.coverage_start)});
    crashes += s.crashes;
  }
  std::string h = absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>kvcheck fuzzing"
      "</title><style>",
      ReportStyle(), "</style></head><body>\n<h1>kvcheck fuzzing</h1>\n",
      crashes == 0 ? "<span class=\"verdict ok\">no crashes</span>"
                   : "<span class=\"verdict bad\">CRASHES</span>");
  absl::StrAppendFormat(&h, "<p class=\"meta\">%s (SIMD %s, %d cores). Started %s.%s</p>\n",
                        E(c.machine.cpu), E(c.machine.simd_target), c.machine.cores, E(c.started),
                        c.defect.empty() ? "" : E(absl::StrCat(" Fuzzing defect ", c.defect, ".")));
  absl::StrAppend(&h, "<h2>Executions per second</h2>", BarsSvg(rates, "execs/s", "#2563eb"),
                  "<h2>Coverage growth (edges)</h2>", BarsSvg(growth, "edges", "#0d9488"),
                  "<h2>Targets</h2><table><tr><th>target</th><th class=\"n\">rounds</th>"
                  "<th class=\"n\">seconds</th><th class=\"n\">execs</th><th class=\"n\">execs/s"
                  "</th><th class=\"n\">coverage</th><th class=\"n\">new corpus files</th>"
                  "<th class=\"n\">crashes</th></tr>");
  for (const FuzzTargetSummary& s : summaries) {
    absl::StrAppendFormat(&h,
                          "<tr%s><td>%s</td><td class=\"n\">%d</td><td class=\"n\">%.0f</td>"
                          "<td class=\"n\">%d</td><td class=\"n\">%.0f</td><td class=\"n\">%d "
                          "&#8594; %d</td><td class=\"n\">%d</td><td class=\"n\">%d</td></tr>",
                          s.crashes > 0 ? " class=\"failed\"" : "", E(s.target), s.rounds,
                          s.seconds, s.execs, s.ExecsPerSecond(), s.coverage_start,
                          s.coverage_end, s.new_corpus_files, s.crashes);
  }
  absl::StrAppend(&h, "</table>\n");
  bool listed = false;
  for (const FuzzTargetSummary& s : summaries) {
    for (const std::string& file : s.regression_files) {
      if (!listed) absl::StrAppend(&h, "<h2>Crashes</h2><ul>");
      listed = true;
      absl::StrAppend(&h, "<li><code>", E(s.target), "</code>: <code>", E(file),
                      "</code> (replayed by <code>//fuzz:", E(s.target),
                      "_fuzzer_replay_test</code>)</li>");
    }
  }
  if (listed) absl::StrAppend(&h, "</ul>\n");
  return h + "</body></html>\n";
}

absl::Status WriteFuzzCampaignFiles(const FuzzCampaign& campaign, const std::string& dir) {
  return WriteReportSet(dir, {{"fuzz-report.json", FuzzCampaignJson(campaign)},
                              {"fuzz-report.md", FuzzCampaignMarkdown(campaign)},
                              {"fuzz-report.xml", FuzzCampaignJunitXml(campaign)},
                              {"fuzz-report.html", FuzzCampaignHtml(campaign)}});
}

}  // namespace kvcheck::report
