// The Metal kernels against the reference (metal_properties.h).
#include "properties/metal_properties.h"

#include <string>
#include <utility>

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "properties/case_isolation.h"
#include "properties/generators.h"
#include "properties/kernel_case.h"
#include "rapidcheck.h"
#include "reference/attention_comparison.h"
#include "reference/reference_attention.h"
#include "src/attention/flash_attention.h"
#include "src/metal/metal_attention.h"

namespace kvcheck::properties {
namespace {

constexpr int64_t kMaxRows = 96;
constexpr int64_t kMaxKeys = 320;
constexpr int64_t kReferenceRows = 2000;  // rows x keys the exact reference checks per case

// `property`: the property's name; `name`: the kernel's, for failure messages.
PropertySpec MetalKernelVsReference(const std::string& property, const std::string& name,
                                    KernelFn kernel, int cases) {
  PropertySpec spec{property, cases, [name, kernel] {
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
              Check(name, c, exact, kernel(in->q, in->k, in->v, in->params));
            });
          }};
  spec.kernels = {name};
  return spec;
}

struct NamedKernel {
  std::string name;
  KernelFn run;
};

absl::StatusOr<Tensor> Flash(const Tensor& q, const Tensor& k, const Tensor& v,
                             const AttentionParams& params) {
  return FlashAttention(q, k, v, params, {.num_threads = 1});
}

// Fails unless `b` agrees with `a` on every element (WithinTwiceTheBound).
void CheckAgreement(const std::string& a_name, const std::vector<float>& a,
                    const std::string& b_name, const std::vector<float>& b,
                    const reference::ReferenceAttention& exact) {
  for (size_t at = 0; at < a.size(); ++at) {
    if (!WithinTwiceTheBound(a[at], b[at], exact, at)) {
      RC_FAIL(absl::StrFormat("element %d: %s %.9g, %s %.9g, exact %.17g (%s), 2x bound %.3g",
                              at, a_name, a[at], b_name, b[at], exact.value[at],
                              reference::ExpectationName(exact.expectation[at]),
                              2 * exact.bound[at]));
    }
  }
}

// Several kernels on one generated case: each within the bound of the reference, and each
// within twice the bound of the first. `check` may add a law of its own (the dispatcher's
// choice, say) over the case and the outputs in the order of `kernels`.
PropertySpec MetalKernelsAgree(
    const std::string& property, KernelCaseLimits limits, int cases,
    std::vector<NamedKernel> kernels,
    std::function<void(const KernelCase&, const std::vector<Tensor>&)> check = nullptr) {
  PropertySpec spec{property, cases, [limits, kernels, check] {
            KernelCase c = *GenKernelCase(kMaxKeys, limits);
            const reference::AttentionProblem& p = c.problem;
            RC_PRE(p.batch * p.num_heads * p.q_len <= kMaxRows);
            SampleCheckedRows(c, kReferenceRows * 40);
            RC_TAG(absl::StrCat("Skv ", p.kv_len < 1000 ? "< 1000" : std::to_string(p.kv_len)));
            RunIsolated([&] {
              const reference::ReferenceAttention exact =
                  reference::ComputeReferenceAttention(c.problem);
              const absl::StatusOr<KernelInputs> in = MakeKernelInputs(c);
              RC_ASSERT(in.ok());
              std::vector<Tensor> outputs;
              for (const NamedKernel& kernel : kernels) {
                NoteStep(kernel.name);
                absl::StatusOr<Tensor> out = kernel.run(in->q, in->k, in->v, in->params);
                Check(kernel.name, c, exact, out);
                if (!outputs.empty()) {
                  CheckAgreement(kernels[0].name, outputs[0].ToFloats(), kernel.name,
                                 out->ToFloats(), exact);
                }
                outputs.push_back(*std::move(out));
              }
              if (check) check(c, outputs);
            });
          }};
  for (const NamedKernel& k : kernels) spec.kernels.push_back(k.name);
  return spec;
}

std::vector<PropertySpec> MetalLawsBetweenKernels() {
  using namespace metal_attention;  // NOLINT: the kernels' names read better bare here
  const NamedKernel vector{"metal_vector", MetalVectorAttention},
      two_pass{"metal_2pass", MetalTwoPassAttention}, tiled{"metal_tiled", MetalTiledAttention},
      dispatcher{"metal", MetalAttention}, flash{"flash", Flash};
  // 1-pass == 2-pass around the dispatcher's threshold, where the dispatcher switches: it must
  // return bit for bit what the kernel it names returns.
  KernelCaseLimits threshold;
  threshold.q_lens = {1};
  threshold.kv_lens = {kTwoPassMinKeys - 1, kTwoPassMinKeys, kTwoPassMinKeys + 1};
  threshold.max_rows = 4;
  auto dispatcher_picks = [](const KernelCase& c, const std::vector<Tensor>& out) {
    const bool two = ChooseMetalKernel(c.problem.q_len, c.problem.kv_len) ==
                     MetalKernelChoice::kTwoPass;
    RC_ASSERT(two == (c.problem.kv_len >= kTwoPassMinKeys));
    RC_ASSERT(out[2].ToBits() == out[two ? 1 : 0].ToBits());
  };
  KernelCaseLimits one_row;
  one_row.q_lens = {1};
  // The tiled kernel's edges: row tiles of kSdpaTiledRows (32) queries, key blocks of
  // kSdpaTiledKeys (16), and its causal block limit, which must reach the block holding the
  // tile's last row's own key. Sq at and around a row tile, Skv - Sq at and around a key block.
  KernelCaseLimits tile_edges;
  tile_edges.q_lens = {31, 32, 33, 64};
  tile_edges.kv_lens = {32, 33, 47, 48, 49, 64, 65, 81};
  tile_edges.max_rows = 1;
  return {
      MetalKernelsAgree("attention/metal_vector_equals_2pass_at_the_threshold", threshold, 30,
                        {vector, two_pass, dispatcher}, dispatcher_picks),
      MetalKernelsAgree("attention/metal_tiled_one_row_equals_vector", one_row, 60,
                        {vector, tiled}),
      MetalKernelsAgree("attention/metal_equals_cpu_flash", {}, 100, {flash, dispatcher}),
      MetalKernelsAgree("attention/metal_tiled_equals_cpu_flash_at_tile_edges", tile_edges, 200,
                        {flash, tiled}),
  };
}

}  // namespace

// The kernels hold at most 256 dims per row (kSdpaMaxHeadDim: the vector and 2-pass kernels'
// lanes, the tiled kernel's registers). A longer row is refused, naming the head dim, by each
// kernel and by the dispatcher, not computed over its first 256 dims or past a register array.
PropertySpec MetalHeadDimLimit() {
  return {"attention/metal_head_dim_limit", 20, [] {
            const int64_t head_dim = *Choice<int64_t>(257, 264, 300, 512);
            const int64_t q_len = *Choice<int64_t>(1, 2, 33);
            const int64_t kv_len = *Choice<int64_t>(1, 5, 1024);
            RunIsolated([&] {
              const Tensor q = *Tensor::Zeros(DType::kF32, {1, 1, q_len, head_dim});
              const Tensor k = *Tensor::Zeros(DType::kF32, {1, 1, kv_len, head_dim});
              using Kernel = absl::StatusOr<Tensor> (*)(const Tensor&, const Tensor&,
                                                        const Tensor&, const AttentionParams&);
              const std::pair<const char*, Kernel> kernels[] = {
                  {"metal_vector", metal_attention::MetalVectorAttention},
                  {"metal_2pass", metal_attention::MetalTwoPassAttention},
                  {"metal_tiled", metal_attention::MetalTiledAttention},
                  {"metal", metal_attention::MetalAttention}};
              for (const auto& [name, kernel] : kernels) {
                const absl::StatusOr<Tensor> out = kernel(q, k, k, {});
                if (out.status().code() != absl::StatusCode::kInvalidArgument ||
                    out.status().message().find("head dim") == std::string::npos) {
                  RC_FAIL(absl::StrCat(name, " with D = ", head_dim, ": ",
                                       out.status().ToString(),
                                       "; expected kInvalidArgument naming the head dim"));
                }
              }
            });
          }};
}

std::vector<PropertySpec> MetalProperties() {
  std::vector<PropertySpec> laws = {
          MetalKernelVsReference("attention/metal_vector_vs_reference", "metal_vector",
                                 metal_attention::MetalVectorAttention, 150),
          MetalKernelVsReference("attention/metal_2pass_vs_reference", "metal_2pass",
                                 metal_attention::MetalTwoPassAttention, 100),
          MetalKernelVsReference("attention/metal_tiled_vs_reference", "metal_tiled",
                                 metal_attention::MetalTiledAttention, 100)};
  for (PropertySpec& law : MetalLawsBetweenKernels()) laws.push_back(std::move(law));
  laws.push_back(MetalHeadDimLimit());
  return laws;
}

PropertySpec MetalKernelLawProperty(const std::string& name, KernelFn kernel, int cases) {
  return MetalKernelVsReference(absl::StrCat("attention/", name, "/vs_reference"), name,
                                std::move(kernel), cases);
}

}  // namespace kvcheck::properties
