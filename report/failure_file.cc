#include "report/failure_file.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace kvcheck::report {
namespace {

constexpr absl::string_view kFormat = "kvcheck-failure";

// Section text, every line indented by two spaces (empty lines stay empty), so that nothing
// in a message can look like a header or a section line.
void AppendSection(std::string& out, absl::string_view title, absl::string_view text) {
  absl::StrAppend(&out, "== ", title, "\n");
  for (absl::string_view line : absl::StrSplit(absl::StripSuffix(text, "\n"), '\n')) {
    absl::StrAppend(&out, line.empty() ? "" : "  ", line, "\n");
  }
}

// A header value is one line: a newline in it would start a header of its own.
std::string OneLine(absl::string_view value) {
  std::string line(value);
  for (char& c : line) c = c == '\n' || c == '\r' ? ' ' : c;
  return line;
}

// A piece of the file quoted in an error: at most 40 bytes, control and non-ASCII bytes as '?'
// (an error is one short line on a terminal, whatever the file holds).
std::string Quoted(absl::string_view text) {
  std::string quoted(text.substr(0, 40));
  for (char& c : quoted) {
    const unsigned char byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7F) c = '?';
  }
  return text.size() > 40 ? quoted + "..." : quoted;
}

absl::Status LineError(int line, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("line ", line, ": ", what));
}

}  // namespace

std::string FormatFailureFile(const FailureFile& f) {
  std::string out = "# kvcheck failure: replay with `kvcheck replay <this file>`\n";
  absl::StrAppend(&out, "format: ", kFormat, " ", kFailureFileVersion, "\n");
  absl::StrAppend(&out, "property: ", OneLine(f.property), "\n");
  if (!f.defect.empty()) absl::StrAppend(&out, "defect: ", OneLine(f.defect), "\n");
  if (!f.engine.empty()) absl::StrAppend(&out, "engine: ", OneLine(f.engine), "\n");
  if (f.isolate) absl::StrAppend(&out, "isolate: true\n");
  absl::StrAppend(&out, "seed: ", f.seed, "\n", "oracle: ", OneLine(f.oracle), "\n");
  absl::StrAppend(&out, "reproduce: ", OneLine(f.reproduce), "\n");
  if (!f.ended.empty()) absl::StrAppend(&out, "ended: ", OneLine(f.ended), "\n");
  if (f.cases > 0) absl::StrAppend(&out, "cases: ", f.cases, "\n");
  out += "\n";
  AppendSection(out, "counterexample", f.counterexample);
  AppendSection(out, "failure", f.failure);
  return out;
}

absl::StatusOr<FailureFile> ParseFailureFile(absl::string_view text) {
  if (text.size() > kMaxFailureFileBytes) {
    return absl::InvalidArgumentError(absl::StrCat("a failure file is at most ",
                                                   kMaxFailureFileBytes, " bytes; this one has ",
                                                   text.size()));
  }
  FailureFile f;
  bool has_format = false, has_property = false, has_seed = false, has_reproduce = false;
  std::string* section = nullptr;
  int number = 0;
  // The newline that ends the last line does not start another one.
  for (absl::string_view line : absl::StrSplit(absl::StripSuffix(text, "\n"), '\n')) {
    ++number;
    // CRLF files (an editor on another system), and stray carriage returns at line ends.
    while (absl::ConsumeSuffix(&line, "\r")) {
    }
    if (section != nullptr || absl::StartsWith(line, "== ")) {
      if (absl::StartsWith(line, "== ")) {
        const absl::string_view title = line.substr(3);
        if (title == "counterexample") {
          section = &f.counterexample;
        } else if (title == "failure") {
          section = &f.failure;
        } else {
          return LineError(number, absl::StrCat("unknown section '", Quoted(title),
                                                "' (counterexample or failure)"));
        }
        continue;
      }
      if (!line.empty() && !absl::StartsWith(line, "  ")) {
        return LineError(number, "a section line must be empty or start with two spaces");
      }
      absl::StrAppend(section, line.empty() ? "" : line.substr(2), "\n");
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos) {
      return LineError(number, absl::StrCat("expected 'key: value', got '", Quoted(line), "'"));
    }
    const absl::string_view key = line.substr(0, colon);
    const absl::string_view value = absl::StripAsciiWhitespace(line.substr(colon + 1));
    if (key == "format") {
      std::vector<absl::string_view> parts = absl::StrSplit(value, ' ');
      int version = 0;
      if (parts.size() != 2 || parts[0] != kFormat || !absl::SimpleAtoi(parts[1], &version)) {
        return LineError(number, absl::StrCat("expected 'format: ", kFormat, " ",
                                              kFailureFileVersion, "'"));
      }
      if (version != kFailureFileVersion) {
        return LineError(number, absl::StrCat("failure file version ", version,
                                              " (this kvcheck reads ", kFailureFileVersion, ")"));
      }
      has_format = true;
    } else if (key == "property") {
      if (value.empty()) return LineError(number, "'property' is empty");
      f.property = std::string(value);
      has_property = true;
    } else if (key == "defect") {
      f.defect = std::string(value);
    } else if (key == "engine") {
      f.engine = std::string(value);
    } else if (key == "isolate") {
      if (value != "true" && value != "false") {
        return LineError(number, "'isolate' must be true or false");
      }
      f.isolate = value == "true";
    } else if (key == "seed") {
      if (!absl::SimpleAtoi(value, &f.seed)) {
        return LineError(number, absl::StrCat("'seed' must be a non-negative integer, not '",
                                              Quoted(value), "'"));
      }
      has_seed = true;
    } else if (key == "oracle") {
      if (value != "dd" && value != "real" && value != "real100") {
        return LineError(number, "'oracle' must be dd, real or real100");
      }
      f.oracle = std::string(value);
    } else if (key == "reproduce") {
      if (value.empty()) return LineError(number, "'reproduce' is empty");
      f.reproduce = std::string(value);
      has_reproduce = true;
    } else if (key == "ended") {
      if (value != "assertion" && value != "crash" && value != "timeout") {
        return LineError(number, "'ended' must be assertion, crash or timeout");
      }
      f.ended = std::string(value);
    } else if (key == "cases") {
      if (!absl::SimpleAtoi(value, &f.cases) || f.cases < 0) {
        return LineError(number, "'cases' must be a non-negative integer");
      }
    } else {
      return LineError(number, absl::StrCat("unknown key '", Quoted(key), "'"));
    }
  }
  if (!has_format) return absl::InvalidArgumentError("not a kvcheck failure file (no 'format:' line)");
  if (!has_property) return absl::InvalidArgumentError("no 'property:' line");
  if (!has_seed) return absl::InvalidArgumentError("no 'seed:' line");
  if (!has_reproduce) return absl::InvalidArgumentError("no 'reproduce:' line");
  return f;
}

std::string FailureFileName(const FailureFile& f) {
  // A defect's kill is named by the defect (its killing property's name repeats it).
  std::string name = f.defect.empty() ? f.property : f.defect;
  for (char& c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') {
      c = '-';
    }
  }
  return name + ".kvfail";
}

}  // namespace kvcheck::report
