// File: attention_properties.h
// Kernel laws for the attention kernels (naive and CPU flash, every path and SIMD target):
//   - every kernel agrees with the 50-digit reference within the per-element bound on
//     generated cases (KernelCase), with observed/bound ratios recorded per kernel and dtype;
//   - the decode path equals the prefill path on the last row;
//   - thread and KV-split counts change nothing beyond the bound, and repeated runs with the
//     same counts are bitwise equal;
//   - permuting batch rows permutes the outputs (bitwise);
//   - attention over a ring cache equals attention over the windowed full history.
#ifndef KVCHECK_PROPERTIES_ATTENTION_PROPERTIES_H_
#define KVCHECK_PROPERTIES_ATTENTION_PROPERTIES_H_

#include <map>
#include <string>
#include <vector>

#include "properties/property_runner.h"
#include "reference/attention_comparison.h"
#include "src/attention/attention_params.h"
#include "src/tensor/tensor.h"

namespace kvcheck::properties {

// Per kernel ("naive", "flash", "flash/scalar", ...) and dtype: cases and ratios.
struct KernelStats {
  int64_t cases = 0;
  reference::RatioStats ratios;
};
using KernelStatsMap = std::map<std::pair<std::string, std::string>, KernelStats>;

// A table: kernel, dtype, cases, max and median observed/bound ratio.
std::string FormatKernelStats(const KernelStatsMap& stats);

std::vector<PropertySpec> AttentionProperties(KernelStatsMap* stats);

// One kernel against the reference on generated cases ("attention/<name>/vs_reference").
PropertySpec KernelLawProperty(
    const std::string& name,
    absl::StatusOr<Tensor> (*kernel)(const Tensor& q, const Tensor& k, const Tensor& v,
                                     const AttentionParams& params),
    int cases);

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_ATTENTION_PROPERTIES_H_
