#include "properties/precision_envelope.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"

namespace kvcheck::properties {
EnvelopeResult CheckPrecisionEnvelope(absl::Span<const float> kernel,
                                      absl::Span<const float> baseline,
                                      const reference::ReferenceAttention& exact, DType dtype) {
  auto bounded = [&](size_t e) {
    return exact.expectation[e] == reference::Expectation::kBounded && exact.magnitude[e] > 0;
  };
  auto class_of = [&](size_t e) {
    return std::fabs(exact.value[e]) >= exact.magnitude[e] / 4 ? 0 : 1;
  };
  const char* const kClassNames[] = {"well-conditioned", "cancelling"};
  // The baseline's worst normalised error per class.
  double baseline_worst[2] = {0, 0};
  for (size_t e = 0; e < exact.value.size(); ++e) {
    if (!bounded(e)) continue;
    double& worst = baseline_worst[class_of(e)];
    worst = std::max(worst, std::fabs(baseline[e] - exact.value[e]) / exact.magnitude[e]);
  }
  EnvelopeResult result;
  const double floor = kEnvelopeFloorUlps * DTypeUnitRoundoff(dtype);
  for (size_t e = 0; e < exact.value.size(); ++e) {
    if (!bounded(e)) continue;
    const int c = class_of(e);
    const double error = std::fabs(kernel[e] - exact.value[e]) / exact.magnitude[e];
    const double allowed = kEnvelopeFactor * baseline_worst[c] + floor +
                           kEnvelopeScoreUlps * 0x1p-24 * exact.score_abs[e];
    const double ratio = error / allowed;
    // NaN errors (a kernel's NaN where the reference is bounded) are the bound's verdict.
    if (!(ratio > result.ratio)) continue;
    result.ratio = ratio;
    if (ratio > 1) {
      result.ok = false;
      result.message = absl::StrFormat(
          "precision regression: among the %s elements, element %d has an error of %.3g of "
          "its magnitude sum_j p_j |v_j|, %.2fx what is allowed (%.0fx the straightforward "
          "f32 baseline's worst %.3g, plus %.0f output ulps, plus %.0f f32 ulps of the row's "
          "score scale %.3g: %.3g)",
          kClassNames[c], e, error, ratio, kEnvelopeFactor, baseline_worst[c],
          kEnvelopeFloorUlps, kEnvelopeScoreUlps, exact.score_abs[e], allowed);
    }
  }
  return result;
}

}  // namespace kvcheck::properties
