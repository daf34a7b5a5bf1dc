// File: html_parts.h
// What the HTML reports share: the page style and horizontal bar charts in inline SVG.
#ifndef KVCHECK_REPORT_HTML_PARTS_H_
#define KVCHECK_REPORT_HTML_PARTS_H_

#include <string>
#include <utility>
#include <vector>

namespace kvcheck::report {

// The <style> body of every report page.
const char* ReportStyle();

// Escaped text for the page (EscapeMarkup, short).
std::string E(const std::string& text);

// Horizontal bars, one per (label, value) row, scaled to the largest, each with its value and
// `unit`.
std::string BarsSvg(const std::vector<std::pair<std::string, double>>& rows,
                    const std::string& unit, const std::string& colour);

}  // namespace kvcheck::report

#endif  // KVCHECK_REPORT_HTML_PARTS_H_
