#include <string>

#include "gtest/gtest.h"
#include "report/baseline.h"
#include "report/failure_file.h"
#include "report/fuzz_campaign.h"
#include "report/markup.h"
#include "report/report_writers.h"
#include "report/run_report.h"

namespace kvcheck::report {
namespace {

RunReport SampleReport() {
  RunReport r;
  r.started = "2026-12-01T00:00:00Z";
  r.command_line = "kvcheck --report=out";
  r.subject = "kvcheck";
  r.seed = 7;
  r.oracle = "double-double";
  r.machine = {"Some CPU <model>", "AVX2", 2};
  r.seconds = 12.5;
  PropertyResult passed;
  passed.name = "cache/ring/f16";
  passed.status = PropertyStatus::kPassed;
  passed.cases = 200;
  passed.requested_cases = 200;
  passed.seconds = 4;
  PropertyResult failed = passed;
  failed.name = "attention/kernels_vs_reference";
  failed.status = PropertyStatus::kFailed;
  failed.cases = 3;
  failed.ended = "assertion";
  failed.message = "expected <bounded> & \"quoted\"\n\x01 control";
  failed.failure_file = "kvcheck-failures/attention-kernels_vs_reference.kvfail";
  r.properties = {passed, failed};
  KernelResult k;
  k.kernel = "flash";
  k.dtype = "f32";
  k.cases = 300;
  k.max_ratio = 0.01;
  k.median_ratio = 1e-4;
  const double ratios[] = {1e-9, 5e-5, 0.02, 3.0};
  k.histogram = RatioHistogram(ratios);
  k.elements = 4;
  r.kernels = {k};
  r.strategies = {{"ring", "f16", 200, 5000, 4, true}};
  DefectResult d;
  d.name = "ring_off_by_one";
  d.property = "cache/ring_off_by_one/f32";
  d.killed = true;
  d.ended = "assertion";
  d.cases = 10;
  d.find_seconds = 0.5;
  d.seconds = 1;
  r.defects = {d};
  r.exit_code = 1;
  return r;
}

TEST(RatioHistogram, CountsDecades) {
  const double ratios[] = {0, 1e-9, 1e-8, 5e-5, 0.99, 1, 7};
  const std::vector<int64_t> bins = RatioHistogram(ratios);
  ASSERT_EQ(bins.size(), static_cast<size_t>(kRatioHistogramBins));
  EXPECT_EQ(bins[0], 2);  // 0 and 1e-9
  EXPECT_EQ(bins[1], 1);  // 1e-8
  EXPECT_EQ(bins[4], 1);  // 5e-5 in [1e-5, 1e-4)
  EXPECT_EQ(bins[8], 1);  // 0.99 in [0.1, 1)
  EXPECT_EQ(bins[9], 2);  // 1 and 7
  EXPECT_EQ(RatioHistogramLabel(0), "< 1e-8");
  EXPECT_EQ(RatioHistogramLabel(4), "1e-5..1e-4");
  EXPECT_EQ(RatioHistogramLabel(9), ">= 1");
}

TEST(ReportJson, RoundTrips) {
  const RunReport r = SampleReport();
  const std::string json = ReportToJson(r);
  absl::StatusOr<RunReport> back = ReportFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(ReportToJson(*back), json);
  EXPECT_EQ(back->properties[1].message, r.properties[1].message);
  EXPECT_EQ(back->kernels[0].histogram, r.kernels[0].histogram);
}

TEST(ReportJson, NamesTheBadField) {
  std::string json = ReportToJson(SampleReport());
  const size_t at = json.find("\"cases\": 200");
  ASSERT_NE(at, std::string::npos);
  json.replace(at, 12, "\"cases\": \"x\"");
  const absl::StatusOr<RunReport> back = ReportFromJson(json);
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("properties[0].cases must be an integer"),
            std::string::npos)
      << back.status();
  EXPECT_FALSE(ReportFromJson("{}").ok());
  EXPECT_FALSE(ReportFromJson("[1,2").ok());
  std::string future = ReportToJson(SampleReport());
  future.replace(future.find("\"schema_version\": 1"), 19, "\"schema_version\": 9");
  EXPECT_NE(ReportFromJson(future).status().message().find("version 9"), std::string::npos);
}

TEST(ReportWriters, EscapeAndCarryTheFailure) {
  const RunReport r = SampleReport();
  const std::string xml = ReportJunitXml(r);
  EXPECT_NE(xml.find("<failure message=\"attention/kernels_vs_reference failed (assertion)\""),
            std::string::npos);
  EXPECT_NE(xml.find("expected &lt;bounded&gt; &amp; &quot;quoted&quot;"), std::string::npos);
  EXPECT_EQ(xml.find('\x01'), std::string::npos);
  EXPECT_NE(xml.find("classname=\"cache.ring\" name=\"f16\""), std::string::npos);
  const std::string html = ReportHtml(r);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("Some CPU &lt;model&gt;"), std::string::npos);
  EXPECT_NE(html.find("kvcheck replay kvcheck-failures/"), std::string::npos);
  const std::string md = ReportMarkdown(r);
  EXPECT_NE(md.find("# kvcheck: FAILED"), std::string::npos);
  EXPECT_NE(md.find("| ring_off_by_one |"), std::string::npos);
}

TEST(Markup, ReplacesInvalidUtf8) {
  EXPECT_EQ(EscapeMarkup("a\xff" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(EscapeMarkup("\xC3\xA9"), "\xC3\xA9");          // é stays
  EXPECT_EQ(EscapeMarkup("\xC0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong NUL
  EXPECT_EQ(EscapeMarkup("\xED\xA0\x80").find("\xED"), std::string::npos);  // a surrogate
}

TEST(Baseline, SameRunHasNoRegressions) {
  const RunReport r = SampleReport();
  EXPECT_TRUE(CompareWithBaseline(r, r).empty());
}

TEST(Baseline, FlagsEachKindOfRegression) {
  RunReport before = SampleReport();
  before.properties[1].status = PropertyStatus::kPassed;  // passed then, fails now
  RunReport now = SampleReport();
  now.kernels[0].max_ratio = 0.05;                          // 5x the baseline's 0.01
  now.defects[0].cases = 50;                                // 5x the cases
  now.properties[0].seconds = 8;                            // 200 cases in 8 s, was 4 s
  const std::vector<Regression> found = CompareWithBaseline(before, now);
  std::vector<std::string> kinds;
  for (const Regression& g : found) kinds.push_back(g.kind);
  EXPECT_EQ(kinds, (std::vector<std::string>{"property", "kernel", "defect", "speed"}));

  RunReport survived = SampleReport();
  survived.defects[0].killed = false;
  ASSERT_EQ(CompareWithBaseline(SampleReport(), survived).size(), 1u);
  EXPECT_NE(CompareWithBaseline(SampleReport(), survived)[0].detail.find("survived"),
            std::string::npos);
}

TEST(Baseline, ToleratesNoiseBelowTheThresholds) {
  RunReport now = SampleReport();
  now.kernels[0].max_ratio = 0.019;        // 1.9x
  now.defects[0].find_seconds = 1.2;       // 2.4x
  now.properties[0].seconds = 5;           // 20% slower over the common properties
  EXPECT_TRUE(CompareWithBaseline(SampleReport(), now).empty());
}

FailureFile SampleFailure() {
  FailureFile f;
  f.property = "cache/ring/f16";
  f.defect = "ring_off_by_one";
  f.seed = 20261129;
  f.reproduce = "AQAAAABBBB";
  f.ended = "crash";
  f.cases = 4;
  f.counterexample = "std::vector<Command>:\n  Append(3)\n\nsecond part";
  f.failure = "row 0: engine 1.5, reference 1.25, bound 0.01 (ratio 25)";
  return f;
}

TEST(FailureFile, RoundTrips) {
  const FailureFile f = SampleFailure();
  const std::string text = FormatFailureFile(f);
  absl::StatusOr<FailureFile> back = ParseFailureFile(text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(FormatFailureFile(*back), text);
  EXPECT_EQ(back->counterexample, f.counterexample + "\n");
  EXPECT_EQ(back->defect, f.defect);
  EXPECT_EQ(FailureFileName(f), "ring_off_by_one.kvfail");
  FailureFile plain = f;
  plain.defect = "";
  EXPECT_EQ(FailureFileName(plain), "cache-ring-f16.kvfail");
}

TEST(FailureFile, ErrorsNameTheLine) {
  std::string text = FormatFailureFile(SampleFailure());
  const auto error = [](const std::string& t) {
    return std::string(ParseFailureFile(t).status().message());
  };
  std::string bad_seed = text;
  bad_seed.replace(bad_seed.find("seed: 20261129"), 14, "seed: -3");
  EXPECT_EQ(error(bad_seed), "line 5: 'seed' must be a non-negative integer, not '-3'");
  EXPECT_EQ(error("format: kvcheck-failure 1\nwhat is this\n"),
            "line 2: expected 'key: value', got 'what is this'");
  EXPECT_EQ(error("format: kvcheck-failure 2\n"),
            "line 1: failure file version 2 (this kvcheck reads 1)");
  EXPECT_EQ(error("format: kvcheck-failure 1\nproperty: x\nseed: 1\n"), "no 'reproduce:' line");
  EXPECT_EQ(error("hello: 1\n"), "line 1: unknown key 'hello'");
  EXPECT_EQ(error(text + "== failure\nnot indented\n"),
            absl::StrCat("line ", std::count(text.begin(), text.end(), '\n') + 2,
                         ": a section line must be empty or start with two spaces"));
  EXPECT_EQ(error(""), "not a kvcheck failure file (no 'format:' line)");
}

TEST(FuzzCampaign, SummarisesRoundsPerTarget) {
  const std::string lines =
      "attention\t1\t60\t84000\t1200\t1250\t640\t655\t0\t\n"
      "cache_ops\t1\t60\t30000\t900\t905\t300\t301\t1\tfuzz/regressions/cache_ops/crash-1\n"
      "attention\t2\t60\t86000\t1250\t1260\t655\t660\t0\t\n";
  absl::StatusOr<std::vector<FuzzRound>> rounds = ParseFuzzRounds(lines);
  ASSERT_TRUE(rounds.ok()) << rounds.status();
  FuzzCampaign campaign;
  campaign.rounds = *rounds;
  const std::vector<FuzzTargetSummary> summaries = campaign.Summaries();
  ASSERT_EQ(summaries.size(), 2u);
  EXPECT_EQ(summaries[0].target, "attention");
  EXPECT_EQ(summaries[0].execs, 170000);
  EXPECT_DOUBLE_EQ(summaries[0].ExecsPerSecond(), 170000 / 120.0);
  EXPECT_EQ(summaries[0].coverage_start, 1200);
  EXPECT_EQ(summaries[0].coverage_end, 1260);
  EXPECT_EQ(summaries[0].new_corpus_files, 20);
  EXPECT_EQ(summaries[1].crashes, 1);
  EXPECT_NE(FuzzCampaignJunitXml(campaign).find("<failure message=\"1 crashes\""),
            std::string::npos);
  EXPECT_NE(FuzzCampaignMarkdown(campaign).find("| attention | 2 | 120 | 170000 | 1417 | "
                                                "1200 -> 1260 (+60) | 20 | 0 |"),
            std::string::npos);
  EXPECT_NE(FuzzCampaignHtml(campaign).find("fuzz/regressions/cache_ops/crash-1"),
            std::string::npos);
  EXPECT_EQ(ParseFuzzRounds("attention\t1\tsixty\t1\t1\t1\t1\t1\t0\t\n").status().message(),
            "line 1, column 3: 'sixty' is not a non-negative number");
  EXPECT_EQ(ParseFuzzRounds("attention\t1\n").status().message(), "line 1: 2 columns, expected 10");
}

}  // namespace
}  // namespace kvcheck::report
