// The Metal kernels against the reference (metal_properties.h).
#include "properties/metal_properties.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "properties/case_isolation.h"
#include "properties/kernel_case.h"
#include "rapidcheck.h"
#include "reference/attention_comparison.h"
#include "reference/reference_attention.h"
#include "src/metal/metal_attention.h"

namespace kvcheck::properties {
namespace {

constexpr int64_t kMaxRows = 96;
constexpr int64_t kMaxKeys = 320;
constexpr int64_t kReferenceRows = 2000;  // rows x keys the exact reference checks per case

using MetalKernel = absl::StatusOr<Tensor> (*)(const Tensor&, const Tensor&, const Tensor&,
                                               const AttentionParams&);

PropertySpec MetalKernelVsReference(const std::string& name, MetalKernel kernel, int cases) {
  return {absl::StrCat("attention/", name, "_vs_reference"), cases, [name, kernel] {
            KernelCase c = *GenKernelCase(kMaxKeys);
            const reference::AttentionProblem& p = c.problem;
            RC_PRE(p.batch * p.num_heads * p.q_len <= kMaxRows);
            SampleCheckedRows(c, kReferenceRows * 40);
            RC_TAG(p.q_len == 1 ? "decode" : "prefill");
            RC_CLASSIFY(p.head_dim > 128, "D > 128");
            RunIsolated([&] {
              const reference::ReferenceAttention exact =
                  reference::ComputeReferenceAttention(c.problem);
              const absl::StatusOr<KernelInputs> in = MakeKernelInputs(c);
              RC_ASSERT(in.ok());
              NoteStep(absl::StrCat(name, " dispatch"));
              const absl::StatusOr<Tensor> out = kernel(in->q, in->k, in->v, in->params);
              if (!out.ok()) RC_FAIL(absl::StrCat(name, " failed: ", out.status().ToString()));
              const reference::AttentionComparison comparison = reference::CompareAttention(
                  out->ToFloats(), exact, {p.batch, p.num_heads, p.q_len, p.head_dim});
              if (!comparison.ok()) {
                RC_FAIL(absl::StrCat(name, ": ", comparison.first_violation, "\n  ",
                                     DescribeRow(p, comparison.first_violation_element / p.head_dim)));
              }
            });
          }};
}

}  // namespace

std::vector<PropertySpec> MetalProperties() {
  return {MetalKernelVsReference("metal_vector", metal_attention::MetalVectorAttention, 150),
          MetalKernelVsReference("metal_2pass", metal_attention::MetalTwoPassAttention, 100),
          MetalKernelVsReference("metal_tiled", metal_attention::MetalTiledAttention, 150)};
}

}  // namespace kvcheck::properties
