// The tensor-op generators shrink to the smallest inputs a failure needs: for a synthetic
// failure that depends on one thing (a dtype, a NaN, a strided layout, a rank, a narrow's
// start, a third Cat part), every other dimension is at its minimum, every layout plain and
// every value 0 (shrink_to_minimum.h).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "properties/generators.h"
#include "properties/shrink_to_minimum.h"
#include "properties/tensor_checks.h"
#include "properties/tensor_spec.h"

namespace kvcheck::properties {
namespace {

using ::testing::ElementsAre;
using ::testing::Each;

std::string Describe(const TensorSpec& spec) {
  std::ostringstream out;
  showValue(spec, out);
  return out.str();
}

bool PlainLayout(const TensorSpec& spec) {
  std::vector<int> identity(spec.shape.size());
  std::iota(identity.begin(), identity.end(), 0);
  return spec.buffer_order == identity &&
         std::all_of(spec.padding.begin(), spec.padding.end(), [](int64_t p) { return p == 0; }) &&
         std::all_of(spec.offset.begin(), spec.offset.end(), [](int64_t o) { return o == 0; }) &&
         spec.broadcast_dims.empty();
}

// Every value 0 (+0: -0 is another value).
bool Zeros(const TensorSpec& spec) {
  return std::all_of(spec.values.begin(), spec.values.end(),
                     [](float x) { return x == 0 && !std::signbit(x); });
}

template <typename T>
T Shrink(const rc::Gen<T>& gen, const std::function<bool(const T&)>& fails) {
  Shrunk shrunk;
  const std::optional<T> value = ShrinkToMinimum<T>(gen, fails, &shrunk);
  EXPECT_TRUE(shrunk.failed);
  EXPECT_FALSE(shrunk.budget_exhausted);
  return value.value_or(T{});
}

TEST(TensorOpShrinking, AHalfPrecisionFailureKeepsOnlyTheDtype) {
  const TensorSpec spec =
      Shrink<TensorSpec>(GenAnyTensorSpec(), [](const TensorSpec& s) { return s.dtype == DType::kF16; });
  EXPECT_EQ(spec.dtype, DType::kF16);
  EXPECT_THAT(spec.shape, ElementsAre(0)) << Describe(spec);
  EXPECT_TRUE(PlainLayout(spec)) << Describe(spec);
}

TEST(TensorOpShrinking, ANaNFailureKeepsOneNaNElement) {
  const TensorSpec spec = Shrink<TensorSpec>(GenAnyTensorSpec(), [](const TensorSpec& s) {
    return std::any_of(s.values.begin(), s.values.end(), [](float x) { return std::isnan(x); });
  });
  EXPECT_EQ(spec.dtype, DType::kF32) << Describe(spec);
  EXPECT_THAT(spec.shape, ElementsAre(1)) << Describe(spec);
  ASSERT_EQ(spec.values.size(), 1u);
  EXPECT_TRUE(std::isnan(spec.values[0]));
  EXPECT_TRUE(PlainLayout(spec)) << Describe(spec);
}

TEST(TensorOpShrinking, ATransposedLayoutKeepsTwoEmptyDimensions) {
  const TensorSpec spec = Shrink<TensorSpec>(GenAnyTensorSpec(), [](const TensorSpec& s) {
    return !std::is_sorted(s.buffer_order.begin(), s.buffer_order.end());
  });
  EXPECT_EQ(spec.dtype, DType::kF32) << Describe(spec);
  EXPECT_THAT(spec.shape, ElementsAre(0, 0)) << Describe(spec);
  EXPECT_THAT(spec.buffer_order, ElementsAre(1, 0));
  EXPECT_THAT(spec.padding, Each(0)) << Describe(spec);
}

TEST(TensorOpShrinking, APaddedLayoutKeepsOnePaddingElement) {
  const TensorSpec spec = Shrink<TensorSpec>(GenAnyTensorSpec(), [](const TensorSpec& s) {
    return std::any_of(s.padding.begin(), s.padding.end(), [](int64_t p) { return p > 0; });
  });
  EXPECT_EQ(spec.dtype, DType::kF32) << Describe(spec);
  EXPECT_THAT(spec.shape, ElementsAre(0)) << Describe(spec);
  EXPECT_THAT(spec.padding, ElementsAre(1)) << Describe(spec);
  EXPECT_THAT(spec.offset, ElementsAre(0)) << Describe(spec);
}

TEST(TensorOpShrinking, ALargeDimensionKeepsZerosElsewhere) {
  const TensorSpec spec = Shrink<TensorSpec>(GenAnyTensorSpec(), [](const TensorSpec& s) {
    return s.shape.size() >= 2 && s.shape[1] >= 3;
  });
  EXPECT_EQ(spec.dtype, DType::kF32) << Describe(spec);
  EXPECT_THAT(spec.shape, ElementsAre(0, 3)) << Describe(spec);
  EXPECT_TRUE(PlainLayout(spec)) << Describe(spec);
}

TEST(TensorOpShrinking, ValuesShrinkToZeroAroundTheOneThatMatters) {
  const TensorSpec spec = Shrink<TensorSpec>(GenAnyTensorSpec(), [](const TensorSpec& s) {
    return s.values.size() >= 3 && s.values[2] < -1;
  });
  EXPECT_EQ(spec.dtype, DType::kF32) << Describe(spec);
  EXPECT_THAT(spec.shape, ElementsAre(3)) << Describe(spec);
  EXPECT_THAT(spec.values, ElementsAre(0.0f, 0.0f, -2.0f)) << Describe(spec);
  EXPECT_TRUE(PlainLayout(spec)) << Describe(spec);
}

// The narrow property's draws: the tensor, then the narrow of its shape.
struct NarrowInput {
  TensorSpec spec;
  NarrowArgs narrow;
};

TEST(TensorOpShrinking, ANarrowStartKeepsTheSmallestTensorThatHasIt) {
  const rc::Gen<NarrowInput> gen = rc::gen::exec([] {
    NarrowInput in;
    in.spec = *GenAnyTensorSpec();
    in.narrow = *GenNarrowArgs(in.spec.shape);
    return in;
  });
  const NarrowInput in = Shrink<NarrowInput>(gen, [](const NarrowInput& i) {
    return i.narrow.dim == 1 && i.narrow.start >= 2;
  });
  EXPECT_THAT(in.spec.shape, ElementsAre(0, 2)) << Describe(in.spec);
  EXPECT_EQ(in.narrow.start, 2);
  EXPECT_EQ(in.narrow.length, 0);
  EXPECT_TRUE(PlainLayout(in.spec)) << Describe(in.spec);
  EXPECT_EQ(in.spec.dtype, DType::kF32);
}

TEST(TensorOpShrinking, AThirdCatPartKeepsThreeEmptyParts) {
  const CatParts c =
      Shrink<CatParts>(GenCatParts(), [](const CatParts& parts) { return parts.parts.size() >= 3; });
  ASSERT_EQ(c.parts.size(), 3u);
  EXPECT_EQ(c.dim, 0);
  for (const TensorSpec& part : c.parts) {
    EXPECT_EQ(part.dtype, DType::kF32);
    EXPECT_THAT(part.shape, ElementsAre(0)) << Describe(part);
    EXPECT_TRUE(PlainLayout(part)) << Describe(part);
  }
}

TEST(TensorOpShrinking, AStridedSliceSetSourceKeepsOnlyItsLayout) {
  const SliceSetCase c = Shrink<SliceSetCase>(GenSliceSetCase(), [](const SliceSetCase& s) {
    return !std::is_sorted(s.src.buffer_order.begin(), s.src.buffer_order.end());
  });
  EXPECT_EQ(c.dst.dtype, DType::kF32);
  EXPECT_THAT(c.dst.shape, ElementsAre(1, 1)) << Describe(c.dst);
  EXPECT_THAT(c.src.shape, ElementsAre(0, 1)) << Describe(c.src);
  EXPECT_EQ(c.dim, 0);
  EXPECT_EQ(c.offset, 0);
  EXPECT_TRUE(PlainLayout(c.dst)) << Describe(c.dst);
  EXPECT_TRUE(Zeros(c.dst)) << Describe(c.dst);
  EXPECT_THAT(c.src.buffer_order, ElementsAre(1, 0));
}

}  // namespace
}  // namespace kvcheck::properties
