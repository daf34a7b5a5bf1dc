// File: attention_properties.h
// Kernel laws for the attention kernels (naive and CPU flash, every path and SIMD target):
//   - every kernel agrees with the reference within the per-element bound on generated cases
//     (KernelCase), with observed/bound ratios recorded per kernel and dtype;
//   - every kernel stays within the precision envelope of the straightforward f32 baseline
//     (precision_envelope.h), a verdict of its own;
//   - the decode path equals the prefill path on the last row;
//   - thread and KV-split counts change nothing beyond the bound, and repeated runs with the
//     same counts are bitwise equal;
//   - permuting batch rows permutes the outputs (bitwise);
//   - attention over a ring cache equals attention over the windowed full history;
//   - malformed calls are refused, empty ones answered (attention_bad_calls.h).
#ifndef KVCHECK_PROPERTIES_ATTENTION_PROPERTIES_H_
#define KVCHECK_PROPERTIES_ATTENTION_PROPERTIES_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "properties/kernel_case.h"
#include "properties/property_runner.h"
#include "properties/subject.h"
#include "reference/attention_comparison.h"
#include "reference/reference_attention.h"
#include "src/attention/attention_params.h"
#include "src/tensor/tensor.h"

namespace kvcheck::properties {

// Per kernel ("naive", "flash", "flash/scalar", ...) and dtype: cases and ratios.
struct KernelStats {
  int64_t cases = 0;
  int64_t unchecked = 0;     // elements outside the bound's no-overflow regime
  int64_t hull_bounded = 0;  // elements bounded by the convex hull (ERROR_BOUND.md step 5)
  reference::RatioStats ratios;
};
using KernelStatsMap = std::map<std::pair<std::string, std::string>, KernelStats>;

// A table: kernel, dtype, cases, max and median observed/bound ratio, and the elements not
// checked (outside the no-overflow regime) or checked against the convex-hull bound.
std::string FormatKernelStats(const KernelStatsMap& stats);
// A table of precision-envelope ratios: kernel, dtype, cases, max and median of the kernel's
// error over what the envelope allows (a ratio above 1 is a precision regression).
std::string FormatEnvelopeStats(const KernelStatsMap& stats);

// The kernel laws over the subject's kernels, recording the observed/bound ratios into *stats
// and the precision-envelope ratios (kernel error / what the envelope allows,
// precision_envelope.h) into *envelope_stats. An external engine's kernels get the laws that
// need nothing but the kernel (reference, envelope, decode == prefill, batch permutation),
// with generated calls limited to the features and dtypes they declare.
// REQUIRES: `subject` outlives the properties.
std::vector<PropertySpec> AttentionProperties(KernelStatsMap* stats,
                                              KernelStatsMap* envelope_stats,
                                              const Subject& subject);

// A kernel as the laws call it (the registry's kernels, a defect's, an external engine's).
using KernelFn = std::function<absl::StatusOr<Tensor>(const Tensor& q, const Tensor& k,
                                                      const Tensor& v,
                                                      const AttentionParams& params)>;

// One kernel against the straightforward f32 baseline's precision on generated cases
// ("attention/<name>/precision_envelope").
PropertySpec PrecisionEnvelopeLawProperty(const std::string& name, KernelFn kernel, int cases);

// One kernel against the reference on generated cases ("attention/<name>/vs_reference").
PropertySpec KernelLawProperty(const std::string& name, KernelFn kernel, int cases);

// A kernel's output `out` for case `c` against `exact`: fails the property, naming the kernel
// and describing the first violating row, when the call failed or an element is outside the
// bound (or its expectation).
reference::AttentionComparison Check(const std::string& name, const KernelCase& c,
                                     const reference::ReferenceAttention& exact,
                                     const absl::StatusOr<Tensor>& out);

// Whether two kernels' element `at` agree: within twice its bound (each is within the bound of
// the exact value), both NaN, or both non-finite where the exact value is; any two answers
// outside the bound's regime or in a row the reference did not check.
bool WithinTwiceTheBound(float a, float b, const reference::ReferenceAttention& exact, size_t at);

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_ATTENTION_PROPERTIES_H_
