// Unit tests of the decoders and the generation loop: argument errors, the weight file round
// trip, and cached generation equal to recomputation on small fixed configurations (the
// generated configurations are properties/generation_properties.cc).
#include "src/model/generator.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvcheck::model {
namespace {

DecoderConfig SmallGpt2() {
  DecoderConfig c;
  c.kind = DecoderKind::kGpt2;
  c.vocab_size = 61;
  c.context_length = 64;
  c.width = 32;
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = 4;
  c.mlp_hidden = 128;
  return c;
}

DecoderConfig SmallLlama() {
  DecoderConfig c;
  c.kind = DecoderKind::kLlama;
  c.vocab_size = 53;
  c.context_length = 64;
  c.width = 32;
  c.num_layers = 3;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.mlp_hidden = 48;
  c.sliding_window = 5;
  return c;
}

std::unique_ptr<Decoder> MakeDecoder(const DecoderConfig& config, uint64_t seed = 7) {
  absl::StatusOr<DecoderWeights> weights = RandomWeights(config, seed);
  EXPECT_TRUE(weights.ok()) << weights.status();
  absl::StatusOr<std::unique_ptr<Decoder>> decoder = Decoder::Create(*std::move(weights));
  EXPECT_TRUE(decoder.ok()) << decoder.status();
  return *std::move(decoder);
}

std::vector<int32_t> Generate(const Decoder& decoder, GenerationOptions options,
                              const std::vector<int32_t>& prompt, int64_t n) {
  absl::StatusOr<std::unique_ptr<Generator>> g = Generator::Create(&decoder, options);
  EXPECT_TRUE(g.ok()) << g.status();
  absl::StatusOr<Generation> out = (*g)->Generate(prompt, n);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? out->tokens : std::vector<int32_t>{};
}

TEST(DecoderConfigTest, RejectsBadShapes) {
  DecoderConfig c = SmallGpt2();
  c.width = 30;  // not a multiple of 4 heads
  EXPECT_EQ(ValidateDecoderConfig(c).code(), absl::StatusCode::kInvalidArgument);
  c = SmallLlama();
  c.num_kv_heads = 3;
  EXPECT_EQ(ValidateDecoderConfig(c).code(), absl::StatusCode::kInvalidArgument);
  c = SmallGpt2();
  c.vocab_size = 0;
  EXPECT_EQ(ValidateDecoderConfig(c).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DecoderConfig::Gpt2Small().num_parameters(), 124439808);  // GPT-2 124M, tied head
}

TEST(DecoderWeightsTest, FileRoundTrip) {
  DecoderConfig config = SmallLlama();
  // Floats that need all nine significant digits to come back as themselves.
  config.norm_eps = 1.23456791e-5f;
  config.rope_theta = 1234567.12f;
  absl::StatusOr<DecoderWeights> weights = RandomWeights(config, 3);
  ASSERT_TRUE(weights.ok());
  const std::string path = ::testing::TempDir() + "/weights.bin";
  ASSERT_TRUE(SaveWeights(*weights, path).ok());
  absl::StatusOr<DecoderWeights> loaded = LoadWeights(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->config.ToString(), config.ToString());
  EXPECT_EQ(loaded->config.norm_eps, config.norm_eps);
  EXPECT_EQ(loaded->config.rope_theta, config.rope_theta);
  EXPECT_EQ(loaded->layers[2].w_gate, weights->layers[2].w_gate);
  EXPECT_EQ(loaded->token_embedding, weights->token_embedding);
  // A truncated file is an error, not a crash.
  std::FILE* f = std::fopen(path.c_str(), "r+b");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  ASSERT_EQ(truncate(path.c_str(), 100), 0);
  EXPECT_EQ(LoadWeights(path).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(LoadWeights(path + ".missing").status().code(), absl::StatusCode::kNotFound);
}

// A weight file whose config is valid but whose values would fill more memory than the
// machine has (or more than 2^63 bytes) and are not in the file: an error naming the
// truncation, before anything is allocated.
TEST(DecoderWeightsTest, HugeConfigWithoutValuesIsTruncatedNotAllocated) {
  for (const char* sizes : {"width=1048576\nmlp_hidden=1048576\n",       // about 2^59 bytes
                            "width=16777216\nmlp_hidden=16777216\n"}) {  // past 2^63
    const std::string text = absl::StrCat(
        "kind=gpt2\nvocab_size=2147483648\ncontext_length=1024\nnum_layers=4096\n"
        "num_heads=16\nnum_kv_heads=16\nnorm_eps=1e-05\nrope_theta=10000\nsliding_window=0\n",
        sizes);
    const std::string path = ::testing::TempDir() + "/huge_weights.bin";
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    const uint32_t text_size = static_cast<uint32_t>(text.size()), count = 1;
    std::fwrite("KVCKWTS1", 1, 8, f);
    std::fwrite(&text_size, 4, 1, f);
    std::fwrite(text.data(), 1, text.size(), f);
    std::fwrite(&count, 4, 1, f);
    std::fclose(f);
    const absl::StatusOr<DecoderWeights> loaded = LoadWeights(path);
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss) << loaded.status();
    EXPECT_THAT(std::string(loaded.status().message()), ::testing::HasSubstr("truncated"));
  }
  // Allocating such a config directly: an error, not a crash or a wrapped size.
  DecoderWeights weights;
  weights.config = SmallGpt2();
  weights.config.width = weights.config.mlp_hidden = int64_t{1} << 24;
  weights.config.num_heads = weights.config.num_kv_heads = 16;
  weights.config.num_layers = 4096;
  EXPECT_EQ(AllocateWeights(weights).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(weights.arena, nullptr);
}

// Weights whose tensors were never given their place (no AllocateWeights): the decoder names
// the first tensor of the wrong size instead of reading through an empty view.
TEST(DecoderWeightsTest, DecoderRejectsWeightsWithoutValues) {
  DecoderWeights weights;
  weights.config = SmallGpt2();
  const absl::StatusOr<std::unique_ptr<Decoder>> decoder = Decoder::Create(std::move(weights));
  EXPECT_EQ(decoder.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(decoder.status().message()),
              ::testing::HasSubstr("tensor token_embedding has 0 values"));
}

// The arena: every tensor in one allocation, each on a 64-byte boundary, in the order a decode
// step reads them (canonical order with the token embedding last), none overlapping, for both
// kinds; a copy has its own arena with the same values, and writing one leaves the other.
TEST(DecoderWeightsTest, OneArenaInStepOrderAndDeepCopies) {
  // Sizes that are no multiple of 16 floats (widths 20 and 24, a hidden size of 37, a
  // vocabulary of 29), so that the padding between tensors is not always 0.
  DecoderConfig odd_gpt2 = SmallGpt2(), odd_llama = SmallLlama();
  odd_gpt2.width = 20;
  odd_gpt2.mlp_hidden = 37;
  odd_gpt2.vocab_size = 29;
  odd_llama.width = 24;
  odd_llama.mlp_hidden = 37;
  odd_llama.vocab_size = 29;
  for (const DecoderConfig& config : {SmallGpt2(), SmallLlama(), odd_gpt2, odd_llama}) {
    absl::StatusOr<DecoderWeights> weights = RandomWeights(config, 7);
    ASSERT_TRUE(weights.ok());
    std::vector<std::pair<std::string, const WeightArray*>> order;
    ForEachWeight(*weights, [&](const std::string& name, const std::vector<int64_t>& shape,
                                WeightArray& data) {
      EXPECT_EQ(static_cast<int64_t>(data.size()), WeightElements(shape)) << name;
      EXPECT_EQ(reinterpret_cast<uintptr_t>(data.data()) % 64, 0u) << name;
      if (name != "token_embedding") order.emplace_back(name, &data);
    });
    order.emplace_back("token_embedding", &weights->token_embedding);
    const float* arena = weights->arena.get();
    ASSERT_NE(arena, nullptr);
    EXPECT_EQ(order.front().second->data(), arena) << config.ToString();
    for (size_t i = 1; i < order.size(); ++i) {
      const WeightArray& before = *order[i - 1].second;
      const WeightArray& here = *order[i].second;
      // Next in the arena, after the one before and its padding (under 16 floats).
      EXPECT_GE(here.data(), before.data() + before.size()) << order[i].first;
      EXPECT_LT(here.data(), before.data() + before.size() + 16) << order[i].first;
    }

    DecoderWeights copy = *weights;
    EXPECT_NE(copy.arena.get(), weights->arena.get());
    EXPECT_EQ(copy.layers.size(), weights->layers.size());
    EXPECT_EQ(copy.token_embedding, weights->token_embedding);
    EXPECT_EQ(copy.layers.back().w_down, weights->layers.back().w_down);
    EXPECT_EQ(copy.final_norm_weight, weights->final_norm_weight);
    copy.layers[0].wq[5] += 1.0f;
    EXPECT_FALSE(copy.layers[0].wq == weights->layers[0].wq);
    DecoderWeights assigned;
    assigned = copy;
    EXPECT_EQ(assigned.layers[0].wq, copy.layers[0].wq);
    EXPECT_NE(assigned.arena.get(), copy.arena.get());
    // A moved-from struct keeps nothing; the moved-to one shows the same floats.
    const float* moved_data = copy.layers[0].wq.data();
    DecoderWeights moved = std::move(copy);
    EXPECT_EQ(moved.layers[0].wq.data(), moved_data);
  }
}

TEST(DecoderTest, ForwardRejectsBadArguments) {
  const std::unique_ptr<Decoder> decoder = MakeDecoder(SmallGpt2());
  ForwardOptions options;
  EXPECT_EQ(decoder->Forward({}, {}, {}, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  const int32_t bad[] = {61};
  EXPECT_EQ(decoder->Forward(bad, {}, {}, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  const int32_t ok[] = {1, 2};
  EXPECT_EQ(decoder->Forward(ok, {63, 63}, {}, options).status().code(),
            absl::StatusCode::kOutOfRange);
  options.logits_rows = 3;
  EXPECT_EQ(decoder->Forward(ok, {}, {}, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(DecoderTest, QkvInOneProductGivesTheSameBitsAsThree) {
  // The arena puts each layer's wq, wk and wv back to back, and Forward then runs them as one
  // product. A copy whose layers 0 and 1 trade their wk storage (the values swapped back, so
  // the model is the same) runs those two layers as three products each: the logits must be
  // the same bits, for decode steps, short chunks (GEMV) and long ones (sgemm), on 1 and 2
  // threads, and on the plain path.
  for (const DecoderConfig& config : {SmallGpt2(), SmallLlama()}) {
    SCOPED_TRACE(config.ToString());
    absl::StatusOr<DecoderWeights> weights = RandomWeights(config, 11);
    ASSERT_TRUE(weights.ok());
    DecoderWeights split = *weights;
    std::swap(split.layers[0].wk, split.layers[1].wk);
    std::swap_ranges(split.layers[0].wk.begin(), split.layers[0].wk.end(),
                     split.layers[1].wk.begin());
    const int64_t qd = config.num_heads * config.head_dim();
    EXPECT_EQ(weights->layers[0].wk.data(),
              weights->layers[0].wq.data() + qd * config.width);  // one product here
    EXPECT_NE(split.layers[0].wk.data(),
              split.layers[0].wq.data() + qd * config.width);  // three here
    absl::StatusOr<std::unique_ptr<Decoder>> joined = Decoder::Create(*std::move(weights));
    absl::StatusOr<std::unique_ptr<Decoder>> apart = Decoder::Create(std::move(split));
    ASSERT_TRUE(joined.ok() && apart.ok());
    for (const int64_t S : {int64_t{1}, int64_t{5}, int64_t{40}}) {
      std::vector<int32_t> tokens(S);
      for (int64_t i = 0; i < S; ++i) tokens[i] = static_cast<int32_t>((7 * i + 3) % 50);
      for (const MatmulPath path : {MatmulPath::kOptimized, MatmulPath::kPlain}) {
        for (int threads : {1, 2}) {
          ForwardOptions options;
          options.matmul = path;
          options.num_threads = threads;
          options.logits_rows = S;
          absl::StatusOr<std::vector<float>> a = (*joined)->Forward(tokens, {}, {}, options);
          absl::StatusOr<std::vector<float>> b = (*apart)->Forward(tokens, {}, {}, options);
          ASSERT_TRUE(a.ok() && b.ok());
          ASSERT_EQ(a->size(), b->size());
          for (size_t i = 0; i < a->size(); ++i) {
            ASSERT_EQ((*a)[i], (*b)[i]) << "S " << S << " threads " << threads << " logit " << i;
          }
        }
      }
    }
  }
}

TEST(GeneratorTest, UnknownStrategyOrKernel) {
  const std::unique_ptr<Decoder> decoder = MakeDecoder(SmallGpt2());
  GenerationOptions options;
  options.cache_strategy = "nope";
  EXPECT_EQ(Generator::Create(decoder.get(), options).status().code(), absl::StatusCode::kNotFound);
  options.cache_strategy = "ring";  // windowed without a window
  EXPECT_EQ(Generator::Create(decoder.get(), options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options = {};
  options.attention_kernel = "nope";
  EXPECT_EQ(Generator::Create(decoder.get(), options).status().code(), absl::StatusCode::kNotFound);
}

TEST(GeneratorTest, PositionPointerStaysOnError) {
  const std::unique_ptr<Decoder> decoder = MakeDecoder(SmallGpt2());
  absl::StatusOr<std::unique_ptr<Generator>> g = Generator::Create(decoder.get(), {});
  ASSERT_TRUE(g.ok());
  const int32_t tokens[] = {1, 2, 3};
  ASSERT_TRUE((*g)->Feed(tokens).ok());
  EXPECT_EQ((*g)->position(), 3);
  const int32_t bad[] = {5, 99};
  EXPECT_FALSE((*g)->Feed(bad).ok());
  EXPECT_EQ((*g)->position(), 3);
}

// The check of the KV-cache chapter of "Build a Large Language Model (From Scratch)", on fixed
// small models: every strategy and kernel generates the tokens of full recomputation (windowed
// strategies: recomputation over the same window). One test per model, so that the test's
// shards (BUILD) split the work: the emulated Metal kernels make it take minutes under ASan.
void CheckCachedGenerationEqualsRecomputation(const DecoderConfig& config) {
  const std::unique_ptr<Decoder> decoder = MakeDecoder(config);
  const std::vector<int32_t> prompt = {3, 1, 4, 1, 5, 9};
  for (const AttentionKernel& kernel : AttentionKernels()) {
    if (kernel.behind_dispatcher) continue;  // run through the dispatcher
    // The recomputation depends on the kernel and the window only: once per window, not
    // once per strategy.
    std::map<int64_t, std::vector<int32_t>> recomputed;  // by cache_window
    for (const CacheStrategy& strategy : CacheStrategies()) {
      GenerationOptions cached;
      cached.cache_strategy = strategy.name;
      cached.attention_kernel = kernel.name;
      cached.cache_window = strategy.windowed ? 7 : 0;
      if (recomputed.count(cached.cache_window) == 0) {
        GenerationOptions uncached = cached;
        uncached.cache_strategy = "none";
        recomputed[cached.cache_window] = Generate(*decoder, uncached, prompt, 30);
      }
      EXPECT_EQ(Generate(*decoder, cached, prompt, 30), recomputed[cached.cache_window])
          << config.ToString() << " " << strategy.name << " " << kernel.name;
    }
  }
}

TEST(GeneratorTest, CachedGenerationEqualsRecomputationGpt2) {
  CheckCachedGenerationEqualsRecomputation(SmallGpt2());
}

TEST(GeneratorTest, CachedGenerationEqualsRecomputationLlama) {
  CheckCachedGenerationEqualsRecomputation(SmallLlama());
}

TEST(GeneratorTest, SeededSamplingIsReproducible) {
  const std::unique_ptr<Decoder> decoder = MakeDecoder(SmallLlama());
  GenerationOptions options;
  options.temperature = 0.8f;
  options.sampling_seed = 42;
  const std::vector<int32_t> a = Generate(*decoder, options, {1, 2}, 20);
  EXPECT_EQ(a, Generate(*decoder, options, {1, 2}, 20));
  options.cache_strategy = "none";
  EXPECT_EQ(a, Generate(*decoder, options, {1, 2}, 20));
}

}  // namespace
}  // namespace kvcheck::model
