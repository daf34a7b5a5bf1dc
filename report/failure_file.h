// File: failure_file.h
// A failure as a file: what ran (the property, the defect or external engine it ran against,
// the seed, the reference's number type), RapidCheck's reproduce string for the shrunk case,
// and, for people, the case itself and what diverged. `kvcheck replay FILE` re-runs exactly
// that case. The text is stable (no times, no paths of the machine) so that a folder of them
// can be checked in as regressions and reviewed in a pull request:
//
//   # kvcheck failure: replay with `kvcheck replay <this file>`
//   format: kvcheck-failure 1
//   property: cache/ring/f16
//   defect: ring_window_off_by_one
//   seed: 20261129
//   oracle: dd
//   reproduce: AQAAAA...
//   ended: assertion
//   cases: 3
//
//   == counterexample
//     <the shrunk operation sequence or kernel inputs, each line indented by two spaces>
//   == failure
//     <what diverged: the values, the bound, the ratio; indented likewise>
//
// Header keys: format, property, seed and reproduce are required; defect, engine (the
// --engine it ran against), isolate, oracle, ended, cases optional; '#' lines are comments.
// The sections are for people: replay does not read them.
#ifndef KVCHECK_REPORT_FAILURE_FILE_H_
#define KVCHECK_REPORT_FAILURE_FILE_H_

#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"

namespace kvcheck::report {

inline constexpr int kFailureFileVersion = 1;
// Larger files are refused (a counterexample is a few kilobytes; a huge file is not one).
inline constexpr size_t kMaxFailureFileBytes = 4 << 20;

struct FailureFile {
  std::string property;   // "cache/ring/f16"
  std::string defect;     // a catalogued defect the case ran against (empty: none)
  std::string engine;     // the --engine it ran against (empty: kvcheck's own)
  bool isolate = false;   // --isolate with that engine
  uint64_t seed = 0;
  std::string oracle = "dd";  // "dd", "real" or "real100"
  std::string reproduce;  // RapidCheck's reproduce string (one line)
  std::string ended;      // "assertion", "crash" or "timeout"
  int cases = 0;          // cases until the failing one, that one included
  std::string counterexample;
  std::string failure;
};

std::string FormatFailureFile(const FailureFile& file);

// Errors name the line ("line 4: 'seed' must be a non-negative integer, not 'x'").
absl::StatusOr<FailureFile> ParseFailureFile(absl::string_view text);

// A file name for it: the property's name (a defect's kill: the defect's) with '/' and odd
// characters as '-', then ".kvfail".
std::string FailureFileName(const FailureFile& file);

}  // namespace kvcheck::report

#endif  // KVCHECK_REPORT_FAILURE_FILE_H_
