#include "properties/oracle_agreement.h"

#include <cmath>

#include "absl/strings/str_format.h"
#include "properties/attention_generators.h"
#include "properties/case_isolation.h"
#include "rapidcheck.h"
#include "reference/reference_attention.h"

namespace kvcheck::properties {
namespace {

using reference::Oracle;
using reference::ReferenceAttention;

// Fails the case unless `got` (computed with `oracle`) agrees with `truth` as the header says.
void ExpectAgreement(const reference::AttentionProblem& p, const ReferenceAttention& got,
                     const ReferenceAttention& truth, Oracle oracle) {
  const double unit = reference::OracleUnit(oracle);
  for (size_t e = 0; e < truth.value.size(); ++e) {
    const char* name = reference::OracleName(oracle);
    if (got.expectation[e] != truth.expectation[e]) {
      RC_FAIL(absl::StrFormat("element %d: the %s oracle expects %s, the 100-digit one %s", e,
                              name, reference::ExpectationName(got.expectation[e]),
                              reference::ExpectationName(truth.expectation[e])));
    }
    const reference::Expectation kind = truth.expectation[e];
    if (kind != reference::Expectation::kBounded && kind != reference::Expectation::kUnbounded) {
      continue;
    }
    const double guarantee =
        unit * static_cast<double>(p.kv_len + p.head_dim + 16) * truth.magnitude[e] * 1.01 +
        0x1p-53 * std::fabs(truth.value[e]) + 0x1p-52 * std::fabs(got.value[e]) + 0x1p-1000;
    const double error = std::fabs(got.value[e] - truth.value[e]);
    if (!(error <= guarantee)) {
      RC_FAIL(absl::StrFormat(
          "element %d: the %s oracle gives %.17g, the 100-digit one %.17g (magnitude %.3g): "
          "error %.3g over the guarantee %.3g",
          e, name, got.value[e], truth.value[e], truth.magnitude[e], error, guarantee));
    }
    if (kind == reference::Expectation::kBounded &&
        !(std::fabs(got.bound[e] - truth.bound[e]) <= 1e-6 * truth.bound[e] + 1e-300)) {
      RC_FAIL(absl::StrFormat("element %d: the %s oracle's bound %.17g, the 100-digit one's %.17g",
                              e, name, got.bound[e], truth.bound[e]));
    }
  }
}

}  // namespace

PropertySpec OracleAgreementProperty(int default_cases) {
  return PropertySpec{"reference/oracles_agree", default_cases, [] {
                        const LabeledProblem labeled = *GenAdversarialProblem();
                        RC_TAG(labeled.family);
                        RunIsolated([&] {
                          const reference::AttentionProblem& p = labeled.problem;
                          const ReferenceAttention truth =
                              reference::ComputeReferenceAttention(p, {}, Oracle::kReal100);
                          for (const Oracle oracle : {Oracle::kDoubleDouble, Oracle::kReal}) {
                            ExpectAgreement(
                                p, reference::ComputeReferenceAttention(p, {}, oracle), truth,
                                oracle);
                          }
                        });
                      }};
}

}  // namespace kvcheck::properties
