// File: selection.h
// What a run selects by name (--strategy, --kernel, --dtype, --property, --defect): comma
// lists of names and globs, and the error a user gets for a name that matches nothing (one
// line, with the nearest valid names).
#ifndef KVCHECK_CLI_SELECTION_H_
#define KVCHECK_CLI_SELECTION_H_

#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/status.h"

namespace kvcheck::cli {

// A comma list of patterns ("ring,flash*,cache/*/f16"). A pattern is an fnmatch glob
// (* ? [...]); it also selects everything under it in the '/' hierarchy of property names
// ("cache/ring" selects "cache/ring/f16"). Empty: selects everything.
class NameSelection {
 public:
  NameSelection() = default;
  explicit NameSelection(absl::string_view comma_list);

  bool empty() const { return patterns_.empty(); }
  bool Matches(absl::string_view name) const;
  const std::vector<std::string>& patterns() const { return patterns_; }

  // OK if every pattern matches at least one of `names`; otherwise an error naming the flag,
  // the pattern and the nearest valid names:
  //   "--kernel: no kernel matches 'flsh' (did you mean flash, flash/scalar?)".
  absl::Status CheckAgainst(absl::string_view flag, absl::string_view what,
                            const std::vector<std::string>& names) const;

 private:
  std::vector<std::string> patterns_;
};

// Up to `count` of `names` nearest to `typed` (edit distance, ties in the names' order), those
// within half of the typed length; a name that starts with `typed` counts as near.
std::vector<std::string> NearestNames(absl::string_view typed, const std::vector<std::string>& names,
                                      size_t count = 3);

}  // namespace kvcheck::cli

#endif  // KVCHECK_CLI_SELECTION_H_
