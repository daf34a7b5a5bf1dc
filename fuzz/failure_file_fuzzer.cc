// failure_file: bytes -> ParseFailureFile (report/failure_file.h), the parser `kvcheck replay`
// runs on files a user hands it (checked in, edited by hand, cut short by a full disk).
//   - Any input either parses or is refused with an error that names a line or a missing key;
//     never a crash, a hang or an unbounded allocation.
//   - What parses, formats, and the formatted text parses again to the same file (the format
//     round-trips: a replay file kvcheck writes reads back as written).
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/match.h"
#include "fuzz/fuzz_support.h"
#include "report/failure_file.h"

namespace kvcheck::fuzz {
namespace {

constexpr char kTarget[] = "failure_file";

bool SameFile(const report::FailureFile& a, const report::FailureFile& b) {
  return a.property == b.property && a.defect == b.defect && a.engine == b.engine &&
         a.isolate == b.isolate && a.seed == b.seed && a.oracle == b.oracle &&
         a.reproduce == b.reproduce && a.ended == b.ended && a.cases == b.cases &&
         a.counterexample == b.counterexample && a.failure == b.failure;
}

int FuzzOne(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  Trace trace;
  trace.Add("input of ", size, " bytes");
  const absl::StatusOr<report::FailureFile> parsed = report::ParseFailureFile(text);
  if (!parsed.ok()) {
    const std::string message(parsed.status().message());
    if (message.empty() || message.size() > 400) {
      Fail(kTarget, trace, "an error message that is empty or longer than 400 bytes: " + message);
    }
    if (!absl::StartsWith(message, "line ") && !absl::StartsWith(message, "no '") &&
        !absl::StartsWith(message, "not a kvcheck failure file") &&
        !absl::StartsWith(message, "a failure file is at most")) {
      Fail(kTarget, trace, "an error that names neither a line nor a missing key: " + message);
    }
    return 0;
  }
  const std::string formatted = report::FormatFailureFile(*parsed);
  const absl::StatusOr<report::FailureFile> again = report::ParseFailureFile(formatted);
  if (!again.ok()) {
    trace.Add("formatted:\n", formatted);
    Fail(kTarget, trace,
         "a parsed file, formatted, does not parse: " + std::string(again.status().message()));
  }
  // A section's text keeps its content, but a trailing newline is the format's own.
  if (!SameFile(*again, report::ParseFailureFile(report::FormatFailureFile(*again)).value()) ||
      report::FormatFailureFile(*again) != formatted) {
    trace.Add("formatted:\n", formatted);
    Fail(kTarget, trace, "formatting a parsed file is not stable");
  }
  return 0;
}

}  // namespace
}  // namespace kvcheck::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return kvcheck::fuzz::FuzzOne(data, size);
}
