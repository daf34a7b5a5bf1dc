#include "cli/selection.h"

#include <fnmatch.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace kvcheck::cli {
namespace {

size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

NameSelection::NameSelection(absl::string_view comma_list) {
  for (absl::string_view pattern : absl::StrSplit(comma_list, ',', absl::SkipWhitespace())) {
    patterns_.emplace_back(absl::StripAsciiWhitespace(pattern));
  }
}

bool NameSelection::Matches(absl::string_view name) const {
  if (patterns_.empty()) return true;
  const std::string text(name);
  for (const std::string& pattern : patterns_) {
    if (fnmatch(pattern.c_str(), text.c_str(), 0) == 0) return true;
    // Everything under the pattern: "cache/ring" and "cache/*" select "cache/ring/f16".
    const std::string below = absl::StrCat(absl::StripSuffix(pattern, "/"), "/*");
    if (fnmatch(below.c_str(), text.c_str(), 0) == 0) return true;
  }
  return false;
}

absl::Status NameSelection::CheckAgainst(absl::string_view flag, absl::string_view what,
                                         const std::vector<std::string>& names) const {
  for (const std::string& pattern : patterns_) {
    NameSelection one(pattern);
    if (std::any_of(names.begin(), names.end(),
                    [&](const std::string& name) { return one.Matches(name); })) {
      continue;
    }
    const std::vector<std::string> near = NearestNames(pattern, names);
    return absl::InvalidArgumentError(absl::StrCat(
        flag, ": no ", what, " matches '", pattern, "'",
        near.empty() ? absl::StrCat(" (kvcheck list shows them)")
                     : absl::StrCat(" (did you mean ", absl::StrJoin(near, ", "), "?)")));
  }
  return absl::OkStatus();
}

std::vector<std::string> NearestNames(absl::string_view typed, const std::vector<std::string>& names,
                                      size_t count) {
  std::vector<std::pair<size_t, size_t>> scored;  // (distance, index)
  for (size_t i = 0; i < names.size(); ++i) {
    size_t distance = EditDistance(typed, names[i]);
    if (!typed.empty() && absl::StartsWith(names[i], typed)) distance = 0;
    // A typo in the last part of a hierarchical name ("cache/rign/f16").
    const size_t slash = names[i].rfind('/');
    if (slash != std::string::npos) {
      distance = std::min(distance, EditDistance(typed, absl::string_view(names[i]).substr(slash + 1)));
    }
    if (distance <= std::max<size_t>(2, typed.size() / 2)) scored.push_back({distance, i});
  }
  std::stable_sort(scored.begin(), scored.end());
  std::vector<std::string> nearest;
  for (size_t k = 0; k < scored.size() && nearest.size() < count; ++k) {
    nearest.push_back(names[scored[k].second]);
  }
  return nearest;
}

}  // namespace kvcheck::cli
