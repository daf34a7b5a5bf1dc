// WeightStream reads exactly the floats a decode step reads: every weight array once and one
// row of the position table, however its shares fall on 1-3 threads, in both placements and
// both ways of reading; and bytes() is that count, for both decoder kinds.
#include "bench/weight_stream.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "src/model/decoder_config.h"
#include "src/model/decoder_weights.h"

namespace kvcheck::bench {
namespace {

model::DecoderConfig Config(model::DecoderKind kind) {
  model::DecoderConfig c;
  c.kind = kind;
  c.vocab_size = 61;
  c.context_length = 64;
  c.width = 32;
  c.num_layers = 3;
  c.num_heads = 4;
  c.num_kv_heads = kind == model::DecoderKind::kGpt2 ? 4 : 2;
  c.mlp_hidden = 96;
  return c;
}

TEST(WeightStreamTest, ReadsEveryWeightOnceAndOnePositionRow) {
  for (model::DecoderKind kind : {model::DecoderKind::kGpt2, model::DecoderKind::kLlama}) {
    const model::DecoderConfig config = Config(kind);
    SCOPED_TRACE(config.ToString());
    absl::StatusOr<model::DecoderWeights> weights = model::RandomWeights(config, 5);
    ASSERT_TRUE(weights.ok()) << weights.status();
    // The expected floats: every array but the position table, and its first row. Every
    // weight becomes a small integer, 1 + (the array's index) % 5 + (its place) % 3, so that
    // the sums stay exact below 2^24 in any order and a float read twice or missed shows.
    int64_t exact = 0, floats = 0, index = 0;
    model::ForEachWeight(*weights, [&](const std::string& name, const std::vector<int64_t>&,
                                       model::WeightArray& data) {
      const int64_t base = 1 + index++ % 5;
      for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(base + i % 3);
      const int64_t count =
          name == "position_embedding" ? config.width : static_cast<int64_t>(data.size());
      for (int64_t i = 0; i < count; ++i) exact += static_cast<int64_t>(data[i]);
      floats += count;
    });
    const int64_t positions =
        kind == model::DecoderKind::kGpt2 ? config.context_length * config.width : 0;
    const int64_t row = kind == model::DecoderKind::kGpt2 ? config.width : 0;
    EXPECT_EQ(floats, config.num_parameters() - positions + row);
    const WeightStream stream(*weights);
    EXPECT_EQ(stream.bytes(), 4 * floats);
    ASSERT_LT(exact, int64_t{1} << 24);
    for (int threads : {1, 2, 3}) {
      for (bool interleaved : {false, true}) {
        for (WeightStream::Placement placement :
             {WeightStream::Placement::kInPlace, WeightStream::Placement::kOneBuffer}) {
          const WeightStream::PassResult pass = stream.TimedPass(threads, interleaved, placement);
          EXPECT_EQ(pass.sum, static_cast<double>(exact))
              << "threads " << threads << " interleaved " << interleaved << " one buffer "
              << (placement == WeightStream::Placement::kOneBuffer);
          EXPECT_GT(pass.seconds, 0);
        }
      }
    }
  }
}

}  // namespace
}  // namespace kvcheck::bench
