// Writes the four report files; each is written to a temporary name and renamed, so that a
// CI step reading the directory never sees half a file.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "report/report_writers.h"

namespace kvcheck::report {
absl::Status WriteTextFile(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".partial";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", temporary, ": ",
                                                      std::strerror(errno)));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("cannot rename ", temporary, " to ", path, ": ",
                                            std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status WriteReportSet(const std::string& dir,
                            const std::vector<std::pair<std::string, std::string>>& files) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot create the report directory ", dir, ": ", error.message()));
  }
  for (const auto& [name, text] : files) {
    if (absl::Status written = WriteTextFile(absl::StrCat(dir, "/", name), text); !written.ok()) {
      return written;
    }
  }
  return absl::OkStatus();
}

absl::Status WriteReportFiles(const RunReport& report, const std::string& dir) {
  return WriteReportSet(dir, {{"report.json", ReportToJson(report)},
                              {"report.md", ReportMarkdown(report)},
                              {"report.xml", ReportJunitXml(report)},
                              {"report.html", ReportHtml(report)}});
}

}  // namespace kvcheck::report
