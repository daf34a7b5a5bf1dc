#include "reference/attention_comparison.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "src/base/check.h"

namespace kvcheck::reference {
namespace {

bool Satisfies(Expectation expectation, float actual, double exact, double bound) {
  switch (expectation) {
    case Expectation::kBounded:
      return std::isfinite(actual) && std::fabs(static_cast<double>(actual) - exact) <= bound;
    case Expectation::kZero:
      return actual == 0.0f;
    case Expectation::kNaN:
      return std::isnan(actual);
    case Expectation::kNonFinite:
      return !std::isfinite(actual);
    case Expectation::kUnbounded:
    case Expectation::kNotChecked:
      return true;
  }
  return false;
}

std::string IndexString(int64_t flat, absl::Span<const int64_t> shape) {
  std::vector<int64_t> index(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    index[d] = shape[d] > 0 ? flat % shape[d] : 0;
    flat = shape[d] > 0 ? flat / shape[d] : 0;
  }
  return absl::StrCat("(b, h, i, d) = (", absl::StrJoin(index, ", "), ")");
}

}  // namespace

void RatioStats::Merge(const RatioStats& other) {
  ratios_.insert(ratios_.end(), other.ratios_.begin(), other.ratios_.end());
}

double RatioStats::Max() const {
  return ratios_.empty() ? 0.0 : *std::max_element(ratios_.begin(), ratios_.end());
}

double RatioStats::Median() const {
  if (ratios_.empty()) return 0.0;
  std::vector<double> copy = ratios_;
  auto middle = copy.begin() + copy.size() / 2;
  std::nth_element(copy.begin(), middle, copy.end());
  return *middle;
}

std::string RatioStats::Summary() const {
  return absl::StrFormat("max %.3g median %.3g over %d elements", Max(), Median(), count());
}

AttentionComparison CompareAttention(absl::Span<const float> actual,
                                     const ReferenceAttention& reference,
                                     absl::Span<const int64_t> shape) {
  KV_CHECK(actual.size() == reference.value.size());
  AttentionComparison result;
  for (size_t e = 0; e < actual.size(); ++e) {
    const Expectation expectation = reference.expectation[e];
    const double exact = reference.value[e];
    const double bound = reference.bound[e];
    if (expectation == Expectation::kUnbounded) ++result.unbounded;
    if (expectation == Expectation::kNotChecked) ++result.not_checked;
    if (expectation == Expectation::kBounded && bound > 0 && std::isfinite(actual[e])) {
      result.ratios.Add(std::fabs(static_cast<double>(actual[e]) - exact) / bound);
    }
    if (Satisfies(expectation, actual[e], exact, bound)) continue;
    if (result.violations++ == 0) {
      result.first_violation_element = static_cast<int64_t>(e);
      result.first_violation = absl::StrFormat(
          "%s: expected %s, actual %.9g, exact %.17g, bound %.3g (error %.3g, error/bound %.3g)",
          IndexString(static_cast<int64_t>(e), shape), ExpectationName(expectation), actual[e],
          exact, bound, std::fabs(static_cast<double>(actual[e]) - exact),
          std::fabs(static_cast<double>(actual[e]) - exact) / bound);
    }
  }
  return result;
}

}  // namespace kvcheck::reference
