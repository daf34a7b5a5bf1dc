// Reads past a view fail the same way every time: Materialize puts every input between
// poisoned red zones (tensor_spec.h). The kernel below runs its key loop in tiles of 4 without
// clamping the last tile, and weighs the keys past the view 0, as a tile's padding: 0 x a
// finite value hides the read, 0 x NaN does not. Over heap memory the read gives whatever
// lies there (a finite value that passes, or another one on the next run); over a red zone
// it is always NaN.
#include <cmath>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "properties/attention_properties.h"
#include "properties/kernel_case.h"
#include "properties/property_runner.h"
#include "properties/tensor_spec.h"
#include "src/attention/naive_attention.h"

namespace kvcheck::properties {
namespace {

using ::testing::HasSubstr;

// v[b, kv_head, j, 0] read through v's layout, j possibly past the view.
float RawValue(const Tensor& v, int64_t b, int64_t kv_head, int64_t j) {
  const int64_t at = v.layout().offset() + b * v.strides()[0] + kv_head * v.strides()[1] +
                     j * v.strides()[2];
  return v.storage()->data<float>()[at];
}

absl::StatusOr<Tensor> TiledPastTheView(const Tensor& q, const Tensor& k, const Tensor& v,
                                        const AttentionParams& params) {
  absl::StatusOr<Tensor> out = NaiveAttention(q, k, v, params);
  if (!out.ok() || v.dtype() != DType::kF32) return out;
  const int64_t batch = q.dim(0), heads = q.dim(1), q_len = q.dim(2);
  const int64_t kv_heads = k.dim(1), kv_len = k.dim(2);
  if (q.dim(3) == 0) return out;
  const int64_t padded = (kv_len + 3) / 4 * 4;
  float* o = out->storage()->data<float>();
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t kv_head = h / (heads / kv_heads);
      for (int64_t j = kv_len; j < padded; ++j) {  // the last tile's keys past the view
        const float weight = 0.0f;
        for (int64_t i = 0; i < q_len; ++i) {
          o[((b * heads + h) * q_len + i) * q.dim(3)] += weight * RawValue(v, b, kv_head, j);
        }
      }
    }
  }
  return out;
}

TEST(RedZone, AReadOnePastTheViewFailsAndReplaysTheSameTenTimes) {
  // f32 only (the kernel reads raw f32), and every case's key count off a multiple of 4 is
  // a read past the view of the last KV head.
  PropertySpec spec = KernelLawProperty("tiled_past_the_view", TiledPastTheView, 200);
  RunOptions options;
  options.isolation.mode = Isolation::kFork;
  const PropertyOutcome first = RunProperty(spec, options);
  ASSERT_FALSE(first.passed) << "a read past the view went unnoticed";
  EXPECT_THAT(first.description, HasSubstr("actual nan"));
  EXPECT_THAT(first.description, HasSubstr("read memory outside an input's view"));
  for (int run = 0; run < 10; ++run) {
    RunOptions replay = options;
    replay.reproduce = first.reproduce;
    const PropertyOutcome again = RunProperty(spec, replay);
    ASSERT_FALSE(again.passed) << "replay " << run << " passed";
    EXPECT_EQ(again.description, first.description) << "replay " << run;
    EXPECT_EQ(again.counterexample, first.counterexample) << "replay " << run;
  }
}

}  // namespace
}  // namespace kvcheck::properties
