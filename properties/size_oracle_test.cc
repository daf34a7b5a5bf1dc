// The size oracle (properties/size_oracle.h) on hand-computed edge cases: each expectation
// here is worked out from the contract text, so a wrong oracle cannot silently agree with a
// wrong engine in the fuzzer and the properties.
#include "properties/size_oracle.h"

#include <cstdint>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "src/tensor/dtype.h"

namespace kvcheck::properties {
namespace {

constexpr int64_t k2To31 = int64_t{1} << 31;
constexpr int64_t k2To32 = int64_t{1} << 32;
constexpr int64_t k2To40 = int64_t{1} << 40;
constexpr int64_t k2To62 = int64_t{1} << 62;
constexpr int64_t kMax = INT64_MAX;
constexpr int64_t k8GiB = int64_t{8} << 30;

TEST(SizeOracleTest, ExactCountSeesPastInt64) {
  EXPECT_EQ(ExactCount({}), 1);
  EXPECT_EQ(ExactCount({k2To31, k2To31}), k2To62);
  EXPECT_EQ(ExactCount({k2To31, k2To32}), std::nullopt);  // 2^63
  EXPECT_EQ(ExactCount({0, kMax, kMax}), 0);
  EXPECT_EQ(ExactCount({3, -1}), std::nullopt);
}

TEST(SizeOracleTest, SpanEndIsExactAndNeverOverflowsItself) {
  EXPECT_EQ(SpanEnd({k2To31}, {k2To32}, 0), (k2To31 - 1) * k2To32 + 1);
  EXPECT_EQ(SpanEnd({kMax}, {1}, 0), kMax);
  EXPECT_EQ(SpanEnd({kMax}, {1}, 1), std::nullopt);
  // Three terms near 2^126 each: the sum would leave 128 bits without the early stop.
  EXPECT_EQ(SpanEnd({0, kMax, kMax, kMax}, {kMax, kMax, kMax, kMax}, kMax), std::nullopt);
  EXPECT_EQ(SpanEnd({2}, {-1}, 0), std::nullopt);
  EXPECT_EQ(SpanEnd({}, {}, kMax), std::nullopt);  // rank 0: offset + 1 alone overflows
  EXPECT_EQ(SpanEnd({}, {}, kMax - 1), kMax);
}

TEST(SizeOracleTest, ContiguousLayoutNeedsEveryPartialProduct) {
  EXPECT_TRUE(ContiguousLayoutValid({k2To62, 4, 0}));   // the zero is innermost
  EXPECT_FALSE(ContiguousLayoutValid({0, k2To62, 4}));  // 4 * 2^62 before the zero
  EXPECT_FALSE(ContiguousLayoutValid({1, 1, 1, 1, 1, 1, 1, 1, 1}));
  EXPECT_FALSE(ContiguousLayoutValid({-1}));
  EXPECT_EQ(RowMajorStrides({k2To62, 4, 0}), (std::vector<int64_t>{0, 0, 1}));
  EXPECT_EQ(RowMajorStrides({1, k2To31, k2To31}), (std::vector<int64_t>{k2To62, k2To31, 1}));
  EXPECT_EQ(RowMajorStrides({2, k2To31, k2To31}), std::nullopt);  // 2^63 elements
}

TEST(SizeOracleTest, ContiguityRuleInExactArithmetic) {
  EXPECT_TRUE(ContiguousByRule({1, 5}, {999, 1}));
  EXPECT_FALSE(ContiguousByRule({k2To40}, {0}));
  // acc = 4 * 2^62 = 2^64 passes int64_t; the zero outer dimension is not checked.
  EXPECT_TRUE(ContiguousByRule({0, k2To62, 4}, {7, 4, 1}));
  // acc = 2^64 + 4: a stride equal to it cannot exist (2^64 + 4 wraps to 4 in int64_t).
  EXPECT_FALSE(ContiguousByRule({2, k2To62 + 1, 4}, {4, 4, 1}));
}

TEST(SizeOracleTest, StridedLayoutAndView) {
  EXPECT_EQ(StridedLayoutExpect({k2To40}, {0}, 0), Expect::kOk);
  EXPECT_EQ(StridedLayoutExpect({2}, {kMax}, 1), Expect::kInvalidArgument);
  EXPECT_EQ(StridedLayoutExpect({0, kMax, kMax}, {1, kMax, kMax}, 0), Expect::kOkOrInvalid);
  EXPECT_EQ(StridedLayoutExpect({3}, {-1}, 0), Expect::kInvalidArgument);
  EXPECT_EQ(StridedLayoutExpect({3}, {1}, -1), Expect::kInvalidArgument);
  EXPECT_EQ(StridedLayoutExpect({3, 4}, {1}, 0), Expect::kInvalidArgument);
  EXPECT_EQ(TensorViewExpect({k2To40}, {0}, 0, 1), Expect::kOk);
  EXPECT_EQ(TensorViewExpect({k2To40}, {0}, 1, 1), Expect::kInvalidArgument);
  EXPECT_EQ(TensorViewExpect({2, 3}, {3, 1}, 0, 5), Expect::kInvalidArgument);
  EXPECT_EQ(TensorViewExpect({2, 3}, {3, 1}, 0, 6), Expect::kOk);
  EXPECT_EQ(TensorViewExpect({0, 3}, {kMax, 1}, 9, 0), Expect::kOkOrInvalid);
}

TEST(SizeOracleTest, NarrowCodes) {
  EXPECT_EQ(NarrowExpect({k2To40}, 0, k2To40 - 1, 1), Expect::kOk);
  EXPECT_EQ(NarrowExpect({k2To40}, 0, kMax, 5), Expect::kOutOfRange);
  EXPECT_EQ(NarrowExpect({4}, 0, -1, -1), Expect::kSomeError);
  EXPECT_EQ(NarrowExpect({4}, 0, 0, -1), Expect::kInvalidArgument);
  EXPECT_EQ(NarrowExpect({4}, 1, 0, 0), Expect::kInvalidArgument);
}

TEST(SizeOracleTest, AllocationCodesFollowStorageH) {
  EXPECT_EQ(AllocationExpect(k2To31, DType::kF32, k8GiB), Expect::kOk);  // exactly the limit
  EXPECT_EQ(AllocationExpect(k2To31 + 1, DType::kF32, k8GiB), Expect::kResourceExhausted);
  EXPECT_EQ(AllocationExpect(k2To62, DType::kF32, k8GiB), Expect::kInvalidArgument);  // 2^64 B
  EXPECT_EQ(AllocationExpect(k2To62 / 2, DType::kBF16, k8GiB), Expect::kResourceExhausted);
  EXPECT_EQ(AllocationExpect(k2To62, DType::kBF16, k8GiB), Expect::kInvalidArgument);  // 2^63 B
  EXPECT_EQ(ContiguousExpect({k2To40}, {0}, DType::kF32, k8GiB), Expect::kResourceExhausted);
  EXPECT_EQ(ContiguousExpect({k2To62}, {0}, DType::kF32, k8GiB), Expect::kInvalidArgument);
  EXPECT_EQ(ContiguousExpect({1}, {0}, DType::kF32, k8GiB), Expect::kOk);
  EXPECT_EQ(ContiguousExpect({k2To40, 0}, {1, 1}, DType::kF32, k8GiB), Expect::kOk);
  EXPECT_EQ(ContiguousExpect({0, k2To62, 4}, {1, 1, 1}, DType::kF32, k8GiB),
            Expect::kInvalidArgument);
}

TEST(SizeOracleTest, CatJoinsExactly) {
  const std::vector<DType> two_f32 = {DType::kF32, DType::kF32};
  EXPECT_EQ(CatShape({{0, k2To62}, {0, k2To62}}, two_f32, 1), std::nullopt);  // 2^63
  EXPECT_EQ(CatShape({{0, k2To62}, {0, k2To62}}, two_f32, 0), (std::vector<int64_t>{0, k2To62}));
  EXPECT_EQ(CatShape({{1, 2}, {1, 3}}, two_f32, 0), std::nullopt);
  EXPECT_EQ(CatShape({{1, 2}, {1, 2}}, {DType::kF32, DType::kF16}, 0), std::nullopt);
  EXPECT_EQ(CatExpect({{k2To40}, {k2To40}}, two_f32, 0, k8GiB), Expect::kResourceExhausted);
  EXPECT_EQ(CatExpect({{k2To62}, {k2To62 - 1}}, two_f32, 0, k8GiB), Expect::kInvalidArgument);
}

TEST(SizeOracleTest, SliceSetCodes) {
  EXPECT_EQ(SliceSetExpect({4, 2}, {1, 2}, true, 0, 3), Expect::kOk);
  EXPECT_EQ(SliceSetExpect({4, 2}, {1, 2}, true, 0, 4), Expect::kOutOfRange);
  EXPECT_EQ(SliceSetExpect({4, 2}, {1, 3}, true, 0, 4), Expect::kSomeError);
  EXPECT_EQ(SliceSetExpect({4, 2}, {1, 3}, true, 0, 0), Expect::kInvalidArgument);
  EXPECT_EQ(SliceSetExpect({4, 2}, {1, 2}, false, 0, 0), Expect::kInvalidArgument);
}

TEST(SizeOracleTest, StatusMismatchNamesTheOpAndBothSides) {
  EXPECT_EQ(StatusMismatch(absl::OkStatus(), Expect::kOkOrInvalid, "Reshape"), std::nullopt);
  EXPECT_EQ(StatusMismatch(absl::OutOfRangeError("x"), Expect::kInvalidArgument, "Narrow"),
            "Narrow returned OUT_OF_RANGE: x; the contract says INVALID_ARGUMENT");
}

}  // namespace
}  // namespace kvcheck::properties
