// File: token_choice.h
// The token a generator must choose from its logits (src/model/generator.h, ChooseToken),
// computed in Real: the first index of the largest logit at temperature 0; else the inverse
// CDF of softmax(logits / T) at the uniform u = (SplitMix64(random) >> 11) * 2^-53, the first
// token whose exact cumulative probability exceeds u.
#ifndef KVCHECK_REFERENCE_TOKEN_CHOICE_H_
#define KVCHECK_REFERENCE_TOKEN_CHOICE_H_

#include <cstdint>
#include <optional>

#include "absl/types/span.h"

namespace kvcheck::reference {

// REQUIRES: logits non-empty and finite, temperature >= 0. Advances `random` once when
// temperature > 0 (as ChooseToken does). Returns nullopt when u lies within 1e-12 of a
// boundary of the exact CDF, where a double-precision sampler may round to either side.
std::optional<int32_t> ReferenceTokenChoice(absl::Span<const float> logits, float temperature,
                                            uint64_t& random);

}  // namespace kvcheck::reference

#endif  // KVCHECK_REFERENCE_TOKEN_CHOICE_H_
