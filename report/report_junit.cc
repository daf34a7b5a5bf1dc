// report.xml: JUnit XML as CI systems read it (GitHub, GitLab, Jenkins): a <testsuite> of the
// properties and one of the defect catalogue, one <testcase> each. A failed property or a
// surviving defect is a <failure>; a property the time limit left out is <skipped/>.
#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "report/markup.h"
#include "report/report_writers.h"

namespace kvcheck::report {

std::string ReportJunitXml(const RunReport& r) {
  int skipped = 0;
  for (const PropertyResult& p : r.properties) skipped += p.status == PropertyStatus::kNotRun;
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  absl::StrAppendFormat(&xml, "<testsuites name=\"kvcheck\" tests=\"%d\" failures=\"%d\" time=\"%.3f\">\n",
                        static_cast<int>(r.properties.size() + r.defects.size()),
                        r.Failed() + r.DefectsSurvived(), r.seconds);
  absl::StrAppendFormat(&xml,
                        "  <testsuite name=\"properties\" tests=\"%d\" failures=\"%d\" "
                        "skipped=\"%d\" time=\"%.3f\" timestamp=\"%s\">\n",
                        static_cast<int>(r.properties.size()), r.Failed(), skipped,
                        r.PropertySeconds(), EscapeMarkup(r.started));
  for (const PropertyResult& p : r.properties) {
    // "cache/ring/f16" -> classname "cache.ring", name "f16": CI tools group by classname.
    const size_t slash = p.name.rfind('/');
    std::string classname = slash == std::string::npos ? "kvcheck" : p.name.substr(0, slash);
    for (char& c : classname) c = c == '/' ? '.' : c;
    const std::string name = slash == std::string::npos ? p.name : p.name.substr(slash + 1);
    absl::StrAppendFormat(&xml, "    <testcase classname=\"%s\" name=\"%s\" time=\"%.3f\">",
                          EscapeMarkup(classname), EscapeMarkup(name), p.seconds);
    if (p.status == PropertyStatus::kFailed) {
      absl::StrAppendFormat(&xml, "\n      <failure message=\"%s\" type=\"%s\">%s%s</failure>\n    ",
                            EscapeMarkup(absl::StrCat(p.name, " failed (", p.ended, ")")),
                            EscapeMarkup(p.ended), EscapeMarkup(p.message),
                            p.failure_file.empty()
                                ? ""
                                : EscapeMarkup(absl::StrCat("\nreplay: kvcheck replay ",
                                                            p.failure_file)));
    } else if (p.status == PropertyStatus::kNotRun) {
      xml += "<skipped message=\"not run: the time limit came first\"/>";
    } else {
      absl::StrAppendFormat(&xml, "<system-out>%d cases%s</system-out>", p.cases,
                            p.stopped_at_time_limit ? " (stopped at the time limit)" : "");
    }
    xml += "</testcase>\n";
  }
  xml += "  </testsuite>\n";
  if (!r.defects.empty()) {
    double seconds = 0;
    for (const DefectResult& d : r.defects) seconds += d.seconds;
    absl::StrAppendFormat(&xml,
                          "  <testsuite name=\"defects\" tests=\"%d\" failures=\"%d\" "
                          "time=\"%.3f\">\n",
                          static_cast<int>(r.defects.size()), r.DefectsSurvived(), seconds);
    for (const DefectResult& d : r.defects) {
      absl::StrAppendFormat(&xml, "    <testcase classname=\"defects\" name=\"%s\" time=\"%.3f\">",
                            EscapeMarkup(d.name), d.seconds);
      if (!d.killed) {
        absl::StrAppendFormat(&xml,
                              "<failure message=\"%s\" type=\"survived\"/>",
                              EscapeMarkup(absl::StrCat("the defect survived ", d.cases,
                                                        " cases of ", d.property)));
      } else {
        absl::StrAppendFormat(&xml, "<system-out>%s</system-out>",
                              EscapeMarkup(absl::StrFormat("killed by %s after %d cases (%s)",
                                                           d.property, d.cases, d.ended)));
      }
      xml += "</testcase>\n";
    }
    xml += "  </testsuite>\n";
  }
  if (!r.baseline.empty()) {
    // Each regression a failing test case of its own, so that CI lists what got worse.
    absl::StrAppendFormat(&xml, "  <testsuite name=\"baseline\" tests=\"%d\" failures=\"%d\">\n",
                          std::max<int>(1, static_cast<int>(r.regressions.size())),
                          static_cast<int>(r.regressions.size()));
    if (r.regressions.empty()) {
      xml += "    <testcase classname=\"baseline\" name=\"no_regressions\"/>\n";
    }
    for (const Regression& g : r.regressions) {
      absl::StrAppendFormat(&xml,
                            "    <testcase classname=\"baseline.%s\" name=\"%s\"><failure "
                            "message=\"%s\" type=\"regression\"/></testcase>\n",
                            EscapeMarkup(g.kind), EscapeMarkup(g.name), EscapeMarkup(g.detail));
    }
    xml += "  </testsuite>\n";
  }
  xml += "</testsuites>\n";
  return xml;
}

}  // namespace kvcheck::report
