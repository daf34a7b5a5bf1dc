// File: attention_comparison.h
// Compares a kernel's output with ReferenceAttention element by element and summarises the
// observed/bound ratios (the tightness evidence the properties print).
#ifndef KVCHECK_REFERENCE_ATTENTION_COMPARISON_H_
#define KVCHECK_REFERENCE_ATTENTION_COMPARISON_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "reference/reference_attention.h"

namespace kvcheck::reference {

// Observed/bound ratios collected over many elements (and cases).
class RatioStats {
 public:
  void Add(double ratio) { ratios_.push_back(ratio); }
  void Merge(const RatioStats& other);
  int64_t count() const { return static_cast<int64_t>(ratios_.size()); }
  absl::Span<const double> values() const { return ratios_; }
  double Max() const;
  double Median() const;
  // "max 0.031 median 0.0024 over 12345 elements".
  std::string Summary() const;

 private:
  std::vector<double> ratios_;
};

struct AttentionComparison {
  int64_t violations = 0;      // elements that break their expectation
  int64_t unbounded = 0;       // elements not checked (overflow regime)
  int64_t not_checked = 0;     // elements of rows the reference left out
  RatioStats ratios;           // |actual - exact| / bound over kBounded elements
  std::string first_violation; // index, expectation, actual, exact and bound of the first one
  int64_t first_violation_element = -1;  // its flat index in (B, H, Sq, D)
  bool ok() const { return violations == 0; }
};

// `actual` is the kernel's output (B, H, Sq, D) row-major, widened to float; `shape` is
// {B, H, Sq, D} for the messages.
AttentionComparison CompareAttention(absl::Span<const float> actual,
                                     const ReferenceAttention& reference,
                                     absl::Span<const int64_t> shape);

}  // namespace kvcheck::reference

#endif  // KVCHECK_REFERENCE_ATTENTION_COMPARISON_H_
