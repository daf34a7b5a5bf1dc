#include "report/html_parts.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "report/markup.h"

namespace kvcheck::report {
namespace {

constexpr char kStyle[] = R"css(
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em auto;max-width:70em;
color:#1d2330;background:#fff;padding:0 1em}
h1{margin-bottom:.2em} h2{border-bottom:1px solid #d0d4dc;padding-bottom:.2em;margin-top:1.6em}
.verdict{font-size:1.3em;font-weight:600;padding:.4em .8em;border-radius:.3em;display:inline-block}
.ok{background:#dff3e4;color:#14532d} .bad{background:#fde2e1;color:#7f1d1d}
.warn{background:#fef3c7;color:#713f12}
table{border-collapse:collapse;margin:.5em 0} td,th{padding:.2em .7em;text-align:left;
border-bottom:1px solid #eceef2} td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
tr.failed td{background:#fde2e1} pre{background:#f6f7f9;padding:.7em;overflow-x:auto;
font-size:.85em;border-radius:.3em;white-space:pre-wrap;overflow-wrap:anywhere} .grid{display:flex;flex-wrap:wrap;gap:1.2em}
figure{margin:0;border:1px solid #e3e6eb;border-radius:.3em;padding:.5em;width:300px}
figcaption{font-size:.9em;margin-bottom:.3em} .meta{color:#5b6475} code.cmd{white-space:pre-wrap;overflow-wrap:anywhere}
svg text{font-size:10px;fill:#3b4252}
)css";

}  // namespace

const char* ReportStyle() { return kStyle; }

std::string E(const std::string& text) { return EscapeMarkup(text); }

std::string BarsSvg(const std::vector<std::pair<std::string, double>>& rows,
                    const std::string& unit, const std::string& colour) {
  constexpr int kLabel = 300, kBarWidth = 320, kRow = 16;
  double most = 0;
  for (const auto& [label, value] : rows) most = std::max(most, value);
  if (most <= 0) most = 1;
  std::string svg = absl::StrFormat("<svg width=\"%d\" height=\"%d\" role=\"img\">",
                                    kLabel + kBarWidth + 90,
                                    static_cast<int>(rows.size()) * kRow + 4);
  for (size_t i = 0; i < rows.size(); ++i) {
    const int y = static_cast<int>(i) * kRow;
    const double width = std::max(1.0, kBarWidth * rows[i].second / most);
    absl::StrAppendFormat(&svg,
                          "<text x=\"0\" y=\"%d\">%s</text><rect x=\"%d\" y=\"%d\" width=\"%.1f\" "
                          "height=\"%d\" fill=\"%s\"/><text x=\"%.1f\" y=\"%d\">%.3g %s</text>",
                          y + 11, E(rows[i].first), kLabel, y + 2, width, kRow - 4, colour,
                          kLabel + width + 4, y + 11, rows[i].second, E(unit));
  }
  return svg + "</svg>";
}

}  // namespace kvcheck::report
