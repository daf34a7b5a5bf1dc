// report.html: one page that opens anywhere (a CI artifact, an e-mail attachment, offline):
// inline CSS and SVG only, no script and no request to the network.
#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "report/html_parts.h"
#include "report/markup.h"
#include "report/report_writers.h"

namespace kvcheck::report {
namespace {




// A histogram of observed error / bound per decade (RatioHistogram's bins), bar heights on a
// log scale of the count so that one element at 1e-3 is visible next to a million at 1e-7.
std::string HistogramSvg(const KernelResult& k) {
  constexpr int kWidth = 300, kHeight = 120, kBase = 95, kBar = 26;
  int64_t most = 1;
  for (int64_t count : k.histogram) most = std::max(most, count);
  std::string svg = absl::StrFormat(
      "<svg width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"error/bound histogram of %s %s\">",
      kWidth, kHeight, E(k.kernel), E(k.dtype));
  if (k.elements == 0) {
    // A kernel the laws gave no case of this dtype (an emulated kernel's budget, a selection).
    return svg + absl::StrFormat("<text x=\"8\" y=\"%d\">no elements checked</text></svg>",
                                 kHeight / 2);
  }
  for (size_t bin = 0; bin < k.histogram.size(); ++bin) {
    const int64_t count = k.histogram[bin];
    const double height =
        count == 0 ? 0 : 4 + 76 * std::log10(1.0 + count) / std::log10(1.0 + most);
    const int x = 8 + static_cast<int>(bin) * (kBar + 3);
    const bool violation = static_cast<int>(bin) == kRatioHistogramBins - 1;
    absl::StrAppendFormat(&svg,
                          "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"%s\">"
                          "<title>%s: %d elements</title></rect>",
                          x, kBase - height, kBar, height, violation ? "#dc2626" : "#3b82f6",
                          E(RatioHistogramLabel(static_cast<int>(bin))), count);
    if (bin % 2 == 1 || violation) {
      absl::StrAppendFormat(&svg, "<text x=\"%d\" y=\"%d\">%s</text>", x, kBase + 12,
                            violation ? "&#8805;1" : absl::StrCat("1e", static_cast<int>(bin) - 9));
    }
  }
  absl::StrAppendFormat(&svg, "<line x1=\"6\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#8a93a3\"/>",
                        kBase, kWidth - 4, kBase);
  absl::StrAppendFormat(&svg, "<text x=\"8\" y=\"%d\">error / bound (decades), log count</text>",
                        kHeight - 4);
  return svg + "</svg>";
}

std::string VerdictHtml(const RunReport& r) {
  if (r.exit_code == 1) return "<span class=\"verdict bad\">FAILED</span>";
  if (r.exit_code == 2) {
    return "<span class=\"verdict warn\">REGRESSED against the baseline</span>";
  }
  return "<span class=\"verdict ok\">PASSED</span>";
}

}  // namespace

std::string ReportHtml(const RunReport& r) {
  std::string h = absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<title>kvcheck report</title><style>",
      ReportStyle(), "</style></head><body>\n<h1>kvcheck report</h1>\n", VerdictHtml(r));
  absl::StrAppendFormat(
      &h,
      "<p>%s</p>"
      "<p class=\"meta\">Subject <code>%s</code>, seed %d, oracle %s, %d workers. Machine: %s "
      "(SIMD %s, %d cores). Started %s. Command: <code class=\"cmd\">%s</code></p>\n",
      E(SummaryLine(r)), E(r.subject), r.seed, E(r.oracle), r.threads, E(r.machine.cpu), E(r.machine.simd_target),
      r.machine.cores, E(r.started), E(r.command_line));

  if (!r.baseline.empty()) {
    absl::StrAppend(&h, "<h2>Against the baseline</h2><p class=\"meta\">", E(r.baseline), "</p>");
    if (r.regressions.empty()) absl::StrAppend(&h, "<p>No regressions.</p>");
    if (!r.regressions.empty()) absl::StrAppend(&h, "<ul>");
    for (const Regression& g : r.regressions) {
      absl::StrAppend(&h, "<li><b>", E(g.kind), "</b> <code>", E(g.name), "</code>: ",
                      E(g.detail), "</li>");
    }
    if (!r.regressions.empty()) absl::StrAppend(&h, "</ul>\n");
  }

  bool failures = false;
  for (const PropertyResult& p : r.properties) {
    if (p.status != PropertyStatus::kFailed) continue;
    if (!failures) absl::StrAppend(&h, "<h2 id=\"failures\">Failures</h2>\n");
    failures = true;
    absl::StrAppend(&h, "<h3><code>", E(p.name), "</code> (", E(p.ended), ")</h3>");
    if (!p.failure_file.empty()) {
      absl::StrAppend(&h, "<p>Replay: <code>kvcheck replay ", E(p.failure_file), "</code></p>");
    }
    absl::StrAppend(&h, "<pre>", E(p.message), "</pre>\n");
  }

  if (!r.kernels.empty()) {
    absl::StrAppend(&h, "<h2>Attention kernels against the reference</h2>"
                        "<p class=\"meta\">Observed error over the derived bound, per element; "
                        "a bar at &#8805;1 is a bound the kernel broke.</p><div class=\"grid\">");
    for (const KernelResult& k : r.kernels) {
      absl::StrAppendFormat(&h,
                            "<figure><figcaption><b>%s</b> %s: %d cases, %d elements, max %.3g, "
                            "median %.3g</figcaption>%s</figure>",
                            E(k.kernel), E(k.dtype), k.cases, k.elements, k.max_ratio,
                            k.median_ratio, HistogramSvg(k));
    }
    absl::StrAppend(&h, "</div>\n");
  }

  if (!r.defects.empty()) {
    std::vector<std::pair<std::string, double>> cases, seconds;
    for (const DefectResult& d : r.defects) {
      const std::string label = d.killed ? d.name : absl::StrCat(d.name, " (SURVIVED)");
      cases.push_back({label, static_cast<double>(d.cases)});
      seconds.push_back({label, d.find_seconds});
    }
    absl::StrAppend(&h, "<h2>Defect catalogue</h2><p>Cases to kill</p>",
                    BarsSvg(cases, "cases", "#7c3aed"), "<p>Seconds to kill</p>",
                    BarsSvg(seconds, "s", "#0d9488"),
                    "<table><tr><th>defect</th><th>killed by</th><th>result</th>"
                    "<th class=\"n\">cases</th><th class=\"n\">seconds</th></tr>");
    for (const DefectResult& d : r.defects) {
      absl::StrAppendFormat(&h,
                            "<tr%s><td>%s</td><td><code>%s</code></td><td>%s</td>"
                            "<td class=\"n\">%d</td><td class=\"n\">%.2f</td></tr>",
                            d.killed ? "" : " class=\"failed\"", E(d.name), E(d.property),
                            d.killed ? E(absl::StrCat("killed (", d.ended, ")")) : "SURVIVED",
                            d.cases, d.find_seconds);
    }
    absl::StrAppend(&h, "</table>\n");
  }

  if (!r.strategies.empty()) {
    std::vector<std::pair<std::string, double>> rates;
    for (const StrategyResult& s : r.strategies) {
      rates.push_back({absl::StrCat(s.strategy, " ", s.dtype),
                       s.seconds > 0 ? s.commands / s.seconds : 0.0});
    }
    absl::StrAppend(&h, "<h2>Cache strategies (state machines)</h2><p>Commands per second</p>",
                    BarsSvg(rates, "commands/s", "#2563eb"),
                    "<table><tr><th>strategy</th><th>dtype</th><th class=\"n\">cases</th>"
                    "<th class=\"n\">commands</th><th class=\"n\">seconds</th><th>result</th></tr>");
    for (const StrategyResult& s : r.strategies) {
      absl::StrAppendFormat(&h,
                            "<tr%s><td>%s</td><td>%s</td><td class=\"n\">%d</td><td class=\"n\">"
                            "%d</td><td class=\"n\">%.2f</td><td>%s</td></tr>",
                            s.passed ? "" : " class=\"failed\"", E(s.strategy), E(s.dtype),
                            s.cases, s.commands, s.seconds, s.passed ? "pass" : "FAIL");
    }
    absl::StrAppend(&h, "</table>\n");
  }

  absl::StrAppend(&h, "<h2>Properties</h2><table><tr><th>property</th><th>result</th>"
                      "<th class=\"n\">cases</th><th class=\"n\">seconds</th></tr>");
  for (const PropertyResult& p : r.properties) {
    absl::StrAppendFormat(&h,
                          "<tr%s><td><code>%s</code></td><td>%s%s</td><td class=\"n\">%d</td>"
                          "<td class=\"n\">%.2f</td></tr>",
                          p.status == PropertyStatus::kFailed ? " class=\"failed\"" : "",
                          E(p.name), PropertyStatusName(p.status),
                          p.stopped_at_time_limit ? " (time limit)" : "", p.cases, p.seconds);
  }
  absl::StrAppend(&h, "</table>\n</body></html>\n");
  return h;
}

}  // namespace kvcheck::report
