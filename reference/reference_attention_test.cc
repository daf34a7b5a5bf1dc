// The reference attention against cases computed by hand.
#include "reference/reference_attention.h"

#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "reference/attention_comparison.h"
#include "testing/status_matchers.h"

namespace kvcheck::reference {
namespace {

using ::kvcheck::testing::StatusIs;

AttentionProblem OneHead(int64_t q_len, int64_t kv_len, int64_t head_dim) {
  AttentionProblem p;
  p.q_len = q_len;
  p.kv_len = kv_len;
  p.head_dim = head_dim;
  p.q.assign(q_len * head_dim, 0.0f);
  p.k.assign(kv_len * head_dim, 0.0f);
  p.v.assign(kv_len * head_dim, 0.0f);
  p.scale = 1.0f;
  return p;
}

// Two queries over two keys, D = 1, scale 1: scores (0, q), so p_1 = e^q / (1 + e^q).
TEST(ReferenceAttention, TwoByTwoSoftmax) {
  AttentionProblem p = OneHead(2, 2, 1);
  p.q = {1.0f, 2.0f};
  p.k = {0.0f, 1.0f};
  p.v = {0.0f, 1.0f};
  const ReferenceAttention r = ComputeReferenceAttention(p);
  EXPECT_NEAR(r.value[0], std::exp(1.0) / (1.0 + std::exp(1.0)), 1e-15);
  EXPECT_NEAR(r.value[1], std::exp(2.0) / (1.0 + std::exp(2.0)), 1e-15);
  EXPECT_EQ(r.expectation[0], Expectation::kBounded);
  EXPECT_GT(r.bound[0], 0.0);
  // Tight enough to mean something: a few dozen f32 ulps for a two-key softmax.
  EXPECT_LT(r.bound[0], 64 * 0x1p-24);
}

TEST(ReferenceAttention, DefaultScaleIsOneOverSqrtD) {
  AttentionProblem p = OneHead(1, 2, 4);
  p.scale.reset();
  p.q = {1, 1, 1, 1};
  p.k = {1, 1, 1, 1, 0, 0, 0, 0};  // scores 4 / 2 = 2 and 0
  p.v = {1, 1, 1, 1, 0, 0, 0, 0};
  const ReferenceAttention r = ComputeReferenceAttention(p);
  EXPECT_NEAR(r.value[2], std::exp(2.0) / (1.0 + std::exp(2.0)), 1e-15);
}

TEST(ReferenceAttention, FullyMaskedRowIsExactlyZero) {
  AttentionProblem p = OneHead(2, 2, 1);
  p.q = {1.0f, 1.0f};
  p.v = {5.0f, 7.0f};
  p.mask = {-INFINITY, -INFINITY, 0.0f, -INFINITY};
  p.mask_batch = 1;
  p.mask_heads = 1;
  const ReferenceAttention r = ComputeReferenceAttention(p);
  EXPECT_EQ(r.expectation[0], Expectation::kZero);
  EXPECT_EQ(r.value[0], 0.0);
  EXPECT_EQ(r.expectation[1], Expectation::kBounded);
  EXPECT_EQ(r.value[1], 5.0);
}

// Bottom-right causal alignment: with Sq = 2 and Skv = 3 the queries sit at positions 1, 2.
TEST(ReferenceAttention, CausalIsAlignedBottomRight) {
  AttentionProblem p = OneHead(2, 3, 1);
  p.causal = true;
  p.v = {1.0f, 2.0f, 6.0f};  // zero scores: uniform weights over the allowed keys
  const ReferenceAttention r = ComputeReferenceAttention(p);
  EXPECT_NEAR(r.value[0], 1.5, 1e-15);
  EXPECT_NEAR(r.value[1], 3.0, 1e-15);
  p.window = 1;  // only the key at the query's own position
  EXPECT_NEAR(ComputeReferenceAttention(p).value[0], 2.0, 1e-15);
}

// ALiBi by hand: zero dot products, slope 0.5, query at position 1: biases -0.5 and 0.
TEST(ReferenceAttention, AlibiByHand) {
  AttentionProblem p = OneHead(1, 2, 1);
  p.alibi_slopes = {0.5f};
  p.v = {1.0f, 0.0f};
  const ReferenceAttention r = ComputeReferenceAttention(p);
  EXPECT_NEAR(r.value[0], std::exp(-0.5) / (std::exp(-0.5) + 1.0), 1e-15);
}

// Softcap by hand: c = 1, raw scores 2 and 0 become tanh(2) and 0.
TEST(ReferenceAttention, SoftcapByHand) {
  AttentionProblem p = OneHead(1, 2, 1);
  p.softcap = 1.0f;
  p.q = {2.0f};
  p.k = {1.0f, 0.0f};
  p.v = {1.0f, 0.0f};
  const ReferenceAttention r = ComputeReferenceAttention(p);
  const double e = std::exp(std::tanh(2.0));
  EXPECT_NEAR(r.value[0], e / (e + 1.0), 1e-15);
}

TEST(ReferenceAttention, GroupedQueryHeadsReadKvHeadHOverGroupSize) {
  AttentionProblem p;
  p.num_heads = 4;
  p.num_kv_heads = 2;
  p.kv_len = 1;
  p.q.assign(4, 1.0f);
  p.k.assign(2, 1.0f);
  p.v = {10.0f, 20.0f};
  const ReferenceAttention r = ComputeReferenceAttention(p);
  EXPECT_EQ(r.value, (std::vector<double>{10, 10, 20, 20}));
}

TEST(ReferenceAttention, NaNAndInfinityPropagate) {
  AttentionProblem p = OneHead(1, 3, 2);
  p.causal = true;
  p.q_positions = {1};
  p.kv_positions = {0, 1, 2};       // key 2 is in the future: not allowed
  p.v = {1, 2, NAN, INFINITY, 5, 5};  // (key, d): key 2 is masked out
  ReferenceAttention r = ComputeReferenceAttention(p);
  EXPECT_EQ(r.expectation[0], Expectation::kNaN);        // NaN in an allowed v
  EXPECT_EQ(r.expectation[1], Expectation::kNonFinite);  // +inf in an allowed v
  p.v = {1, 1, 2, 2, NAN, NAN};
  r = ComputeReferenceAttention(p);
  EXPECT_EQ(r.expectation[0], Expectation::kBounded);    // the NaN key is masked out
  EXPECT_NEAR(r.value[0], 1.5, 1e-15);
  p.q = {NAN, 0};
  EXPECT_EQ(ComputeReferenceAttention(p).expectation[1], Expectation::kNaN);  // NaN score
  p.q = {INFINITY, 0};
  p.k = {1, 0, 1, 0, 1, 0};
  EXPECT_EQ(ComputeReferenceAttention(p).expectation[0], Expectation::kNaN);  // +inf score
}

TEST(ReferenceAttention, PaddingSlotsAndQueriesAreNeverAllowed) {
  AttentionProblem p = OneHead(2, 2, 1);
  p.q_positions = {-1, 5};
  p.kv_positions = {-1, 3};
  p.v = {100.0f, 4.0f};
  const ReferenceAttention r = ComputeReferenceAttention(p);
  EXPECT_EQ(r.expectation[0], Expectation::kZero);
  EXPECT_EQ(r.value[1], 4.0);
}

TEST(ReferenceAttention, ValidationNamesTheField) {
  AttentionProblem p = OneHead(1, 1, 1);
  p.num_heads = 3;
  p.num_kv_heads = 2;
  EXPECT_THAT(ValidateAttentionProblem(p),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("multiple")));
  p = OneHead(1, 1, 1);
  p.alibi_slopes = {1, 2};
  EXPECT_THAT(ValidateAttentionProblem(p),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("ALiBi")));
  p = OneHead(1, 1, 1);
  p.mask = {0, 0};
  p.mask_batch = 1;
  p.mask_heads = 1;
  EXPECT_THAT(ValidateAttentionProblem(p),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("mask")));
}

TEST(AttentionComparison, FlagsViolationsAndReportsRatios) {
  AttentionProblem p = OneHead(2, 2, 1);
  p.q = {1.0f, 2.0f};
  p.k = {0.0f, 1.0f};
  p.v = {0.0f, 1.0f};
  const ReferenceAttention r = ComputeReferenceAttention(p);
  const std::vector<float> good = {static_cast<float>(r.value[0]), static_cast<float>(r.value[1])};
  AttentionComparison c = CompareAttention(good, r, {1, 1, 2, 1});
  EXPECT_TRUE(c.ok());
  EXPECT_EQ(c.ratios.count(), 2);
  EXPECT_LT(c.ratios.Max(), 0.5);
  const std::vector<float> bad = {good[0] + 1e-3f, good[1]};
  c = CompareAttention(bad, r, {1, 1, 2, 1});
  EXPECT_EQ(c.violations, 1);
  EXPECT_THAT(c.first_violation, ::testing::HasSubstr("(0, 0, 0, 0)"));
}

}  // namespace
}  // namespace kvcheck::reference
