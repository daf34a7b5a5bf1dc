#include "reference/token_choice.h"

#include <vector>

#include "reference/real.h"
#include "src/base/check.h"
#include "src/base/split_mix.h"

namespace kvcheck::reference {

std::optional<int32_t> ReferenceTokenChoice(absl::Span<const float> logits, float temperature,
                                            uint64_t& random) {
  KV_CHECK(!logits.empty() && temperature >= 0);
  int32_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[best]) best = static_cast<int32_t>(i);
  }
  if (temperature == 0) return best;
  // u is a multiple of 2^-53 below 1: exact in Real.
  const Real u = Real(SplitMix64(random) >> 11) * pow(Real(2), -53);
  const Real t = Real(temperature), top = Real(logits[best]);
  std::vector<Real> cumulative(logits.size());
  Real total = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    total += exp((Real(logits[i]) - top) / t);
    cumulative[i] = total;
  }
  const Real margin = Real(1e-12);
  std::optional<int32_t> chosen;
  for (size_t i = 0; i < logits.size(); ++i) {
    const Real boundary = cumulative[i] / total;
    if (abs(u - boundary) < margin) return std::nullopt;
    if (!chosen.has_value() && u < boundary) chosen = static_cast<int32_t>(i);
  }
  KV_CHECK(chosen.has_value());  // the last boundary is 1 > u
  return chosen;
}

}  // namespace kvcheck::reference
