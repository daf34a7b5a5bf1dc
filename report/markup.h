// File: markup.h
// Escaping for the XML and HTML reports: property names and failure messages are arbitrary
// text (a counterexample may hold '<', '&', quotes, or bytes that are not UTF-8).
#ifndef KVCHECK_REPORT_MARKUP_H_
#define KVCHECK_REPORT_MARKUP_H_

#include <string>
#include "absl/strings/string_view.h"

namespace kvcheck::report {

// Text for an XML/HTML element or a quoted attribute: & < > " ' escaped; control characters
// other than tab and newline (not allowed in XML 1.0) and invalid UTF-8 become U+FFFD.
std::string EscapeMarkup(absl::string_view text);

}  // namespace kvcheck::report

#endif  // KVCHECK_REPORT_MARKUP_H_
