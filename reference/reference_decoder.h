// File: reference_decoder.h
// The reference decoder: the same gpt2 / llama forward pass as src/model/decoder.h, written
// as plain loops in Real (50 digits) over the same f32 weights, for small configurations.
//
// It computes the logits of every position of `tokens` by full recomputation (token i at
// position i, causal attention, layer l restricted to its layer_windows[l] most recent
// positions when > 0). LayerNorm, RMSNorm, GELU (tanh form), SiLU, RoPE angles and the softmax
// use Real's exact-to-50-digits functions, so the result is the exact value of the model the
// engine computes in f32; what the engine may deviate by is its rounding.
//
// Cost: about S * L * (4 W^2 + 3 W F) + S * V * W multiprecision operations; meant for
// W, F <= 64, V <= 64, S <= 32.
#ifndef KVCHECK_REFERENCE_REFERENCE_DECODER_H_
#define KVCHECK_REFERENCE_REFERENCE_DECODER_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "src/model/decoder_weights.h"

namespace kvcheck::reference {

// [S, V] row-major, each the nearest double of the exact logit.
// REQUIRES: tokens in [0, V), S <= context_length, layer_windows empty or one per layer.
std::vector<double> ReferenceDecoderLogits(const model::DecoderWeights& weights,
                                           absl::Span<const int32_t> tokens,
                                           absl::Span<const int64_t> layer_windows);

}  // namespace kvcheck::reference

#endif  // KVCHECK_REFERENCE_REFERENCE_DECODER_H_
