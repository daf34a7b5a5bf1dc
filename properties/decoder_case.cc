#include "properties/decoder_case.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "properties/generators.h"
#include "src/model/decoder_weights.h"

namespace kvcheck::properties {

using model::Decoder;
using model::DecoderConfig;
using model::DecoderKind;
using model::GenerationOptions;

void showValue(const DecoderCase& c, std::ostream& os) {
  os << c.config.ToString() << ", weight seed " << c.weight_seed << ", prompt ["
     << absl::StrJoin(c.prompt, ",") << "], " << c.new_tokens << " new tokens, kernel " << c.kernel
     << ", cache window " << c.cache_window << ", attention gain " << c.attention_gain
     << ", MLP gain " << c.mlp_gain;
  if (c.temperature > 0) {
    os << ", temperature " << c.temperature << ", sampling seed " << c.sampling_seed;
  }
  if (c.config.kind == DecoderKind::kLlama) os << ", rope_theta " << c.config.rope_theta;
}

std::vector<const AttentionKernel*> DecoderKernels(const Subject& subject) {
  constexpr uint32_t kNeeded = kFeatureCausal | kFeatureWindow | kFeaturePositions | kFeatureGqa;
  std::vector<const AttentionKernel*> kernels;
  for (const AttentionKernel& kernel : subject.kernels) {
    if ((kernel.features & kNeeded) == kNeeded && kernel.supports(DType::kF32) &&
        !kernel.behind_dispatcher) {
      kernels.push_back(&kernel);
    }
  }
  if (kernels.empty()) {
    for (const AttentionKernel& kernel : AttentionKernels()) {
      if (!kernel.behind_dispatcher) kernels.push_back(&kernel);
    }
  }
  return kernels;
}

rc::Gen<DecoderCase> GenDecoderCase(bool windowed_strategy,
                                    const std::vector<const AttentionKernel*>& kernels,
                                    bool sampling) {
  return rc::gen::exec([windowed_strategy, kernels, sampling] {
    DecoderCase c;
    DecoderConfig& m = c.config;
    m.kind = *Uniform(0, 2) == 0 ? DecoderKind::kGpt2 : DecoderKind::kLlama;
    m.vocab_size = *Uniform<int64_t>(2, 48);
    m.context_length = 40;
    m.num_kv_heads = *Uniform<int64_t>(1, 3);
    m.num_heads =
        m.kind == DecoderKind::kGpt2 ? m.num_kv_heads : m.num_kv_heads * *Uniform<int64_t>(1, 4);
    m.width = m.num_heads * *Choice<int64_t>(2, 4, 6, 8);
    m.num_layers = *Uniform<int64_t>(1, 4);
    m.mlp_hidden = m.kind == DecoderKind::kGpt2 ? 4 * m.width : *Uniform<int64_t>(4, 49);
    if (m.kind == DecoderKind::kLlama && Sometimes(50)) {
      m.sliding_window = *Uniform<int64_t>(1, 8);
    }
    // Small bases turn every RoPE pair a visible angle per position within a short prompt.
    if (m.kind == DecoderKind::kLlama) m.rope_theta = *Choice(10000.0f, 100.0f, 10.0f);
    c.weight_seed = *rc::gen::arbitrary<uint64_t>();
    c.attention_gain = *Choice(1.0f, 4.0f, 16.0f);
    c.mlp_gain = *Choice(1.0f, 8.0f, 32.0f);
    if (sampling && Sometimes(30)) {
      c.temperature = *Choice(1.0f, 0.5f, 2.0f);
      c.sampling_seed = *rc::gen::arbitrary<uint64_t>();
    }
    c.prompt = *rc::gen::container<std::vector<int32_t>>(
        static_cast<size_t>(*Uniform(1, 10)),
        rc::gen::inRange<int32_t>(0, static_cast<int32_t>(m.vocab_size)));
    c.new_tokens = *Uniform<int64_t>(1, 20);
    // A generation feeds the prompt and every chosen token but the last: one case in four
    // fills the context exactly, so that its last position is used (the rest leave room).
    if (Sometimes(25)) {
      m.context_length = static_cast<int64_t>(c.prompt.size()) + c.new_tokens - 1;
    }
    c.kernel_ptr = kernels[*Uniform<size_t>(0, kernels.size())];
    // An emulated kernel (the Metal dispatcher: a thousand times slower per call) drives one
    // case in ten it is drawn for; the others go to a CPU kernel, so the law's time stays.
    if (c.kernel_ptr->emulated() && !Sometimes(10)) {
      std::vector<const AttentionKernel*> cpu;
      for (const AttentionKernel* kernel : kernels) {
        if (!kernel->emulated()) cpu.push_back(kernel);
      }
      if (!cpu.empty()) c.kernel_ptr = cpu[*Uniform<size_t>(0, cpu.size())];
    }
    c.kernel = c.kernel_ptr->name;
    if (windowed_strategy) c.cache_window = *Uniform<int64_t>(1, 10);
    return c;
  });
}

std::unique_ptr<Decoder> MakeDecoder(const DecoderCase& c) {
  absl::StatusOr<model::DecoderWeights> weights = model::RandomWeights(c.config, c.weight_seed);
  RC_ASSERT(weights.ok());
  model::ForEachWeight(*weights, [&](const std::string& name, const std::vector<int64_t>&,
                                     model::WeightArray& data) {
    const bool attention = name.ends_with(".wq") || name.ends_with(".wk");
    const bool mlp = name.ends_with(".w_up") || name.ends_with(".w_gate") ||
                     name.ends_with(".w_down");
    const float gain = attention ? c.attention_gain : mlp ? c.mlp_gain : 1.0f;
    if (gain == 1.0f) return;
    for (float& x : data) x *= gain;
  });
  absl::StatusOr<std::unique_ptr<Decoder>> decoder = Decoder::Create(*std::move(weights));
  RC_ASSERT(decoder.ok());
  return *std::move(decoder);
}

void showValue(const StrategyChoice& c, std::ostream& os) {
  os << "cache strategy " << c.strategy->name;
}

rc::Gen<StrategyChoice> GenStrategy(const std::vector<const CacheStrategy*>& strategies) {
  return rc::gen::map(Uniform<size_t>(0, strategies.size()), [strategies](size_t i) {
    return StrategyChoice{strategies[i]};
  });
}

std::vector<const CacheStrategy*> DecoderStrategies(const Subject& subject) {
  std::vector<const CacheStrategy*> strategies;
  for (const CacheStrategy& strategy : subject.strategies) {
    if (strategy.supports(DType::kF32)) strategies.push_back(&strategy);
  }
  return strategies;
}

GenerationOptions Options(const DecoderCase& c, const CacheStrategy* strategy) {
  GenerationOptions o;
  o.cache_strategy = strategy == nullptr ? "none" : strategy->name;
  o.strategy = strategy;
  o.cache_window = c.cache_window;
  o.attention_kernel = c.kernel;
  o.kernel = c.kernel_ptr;
  o.temperature = c.temperature;
  o.sampling_seed = c.sampling_seed;
  return o;
}

double Tolerance(absl::Span<const float> exact) {
  double max_abs = 0;
  for (float x : exact) max_abs = std::max(max_abs, std::fabs(static_cast<double>(x)));
  return kRelativeLogitTolerance * (1 + max_abs);
}

double TopGap(absl::Span<const float> logits) {
  double first = -INFINITY, second = -INFINITY;
  for (float x : logits) {
    if (x > first) {
      second = first;
      first = x;
    } else if (x > second) {
      second = x;
    }
  }
  return first - second;
}

}  // namespace kvcheck::properties
