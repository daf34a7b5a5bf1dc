// Kernel cases shrink to the smallest case a failure needs: for a synthetic failure that
// depends on one or two features, every other size is at its minimum and every other optional
// feature off (shrink_to_minimum.h).
#include <cmath>
#include <numeric>
#include <sstream>
#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "properties/kernel_case.h"
#include "properties/shrink_to_minimum.h"

namespace kvcheck::properties {
namespace {

bool Plain(const TensorSpec& spec) {
  std::vector<int> identity(spec.shape.size());
  std::iota(identity.begin(), identity.end(), 0);
  return spec.buffer_order == identity &&
         std::all_of(spec.padding.begin(), spec.padding.end(), [](int64_t p) { return p == 0; }) &&
         spec.broadcast_dims.empty();
}

std::string Describe(const KernelCase& c) {
  std::ostringstream out;
  showValue(c, out);
  return out.str();
}

// Every size and feature of `c` at its minimum but those in `needed`.
void ExpectMinimalBut(const KernelCase& c, const std::set<std::string>& needed) {
  const reference::AttentionProblem& p = c.problem;
  const auto check = [&](const char* what, bool minimal) {
    if (needed.count(what) == 0) {
      EXPECT_TRUE(minimal) << what << " is not minimal in\n" << Describe(c);
    }
  };
  check("dtype", p.output_dtype == DType::kF32);
  check("batch", p.batch == 1);
  check("heads", p.num_heads == 1 && p.num_kv_heads == 1);
  check("q_len", p.q_len == 1);
  check("kv_len", p.kv_len == 0);
  check("head_dim", p.head_dim == 1);
  check("window", p.window == 0);
  check("scale", !p.scale.has_value());
  check("softcap", p.softcap == 0);
  check("alibi", p.alibi_slopes.empty());
  check("causal", !p.causal);
  check("mask", !c.mask.has_value());
  check("positions", c.positions_kind == "default" && p.q_positions.empty() &&
                         p.kv_positions.empty());
  check("amplitude", c.amplitude == 1.0f);
  check("specials", c.notes.empty());
  check("layout_q", Plain(c.q));
  check("layout_k", Plain(c.k));
  check("layout_v", Plain(c.v));
}

KernelCase Shrink(const std::function<bool(const KernelCase&)>& fails) {
  Shrunk shrunk;
  const std::optional<KernelCase> c = ShrinkToMinimum<KernelCase>(GenKernelCase(), fails, &shrunk);
  EXPECT_TRUE(shrunk.failed) << "no generated case has the feature";
  EXPECT_FALSE(shrunk.budget_exhausted);
  return c.value_or(KernelCase{});
}

TEST(KernelCaseShrinking, AHeadDimConditionKeepsOnlyTheHeadDim) {
  const KernelCase c = Shrink([](const KernelCase& c) {
    return c.problem.head_dim >= 5 && c.problem.head_dim % 4 == 1;
  });
  EXPECT_EQ(c.problem.head_dim, 5);
  ExpectMinimalBut(c, {"head_dim"});
}

TEST(KernelCaseShrinking, PrefillKeepsTwoRows) {
  const KernelCase c = Shrink([](const KernelCase& c) { return c.problem.q_len > 1; });
  EXPECT_EQ(c.problem.q_len, 2);
  ExpectMinimalBut(c, {"q_len"});
}

TEST(KernelCaseShrinking, AStridedVKeepsOnlyItsLayout) {
  const KernelCase c = Shrink([](const KernelCase& c) { return !Plain(c.v); });
  ExpectMinimalBut(c, {"layout_v"});
}

TEST(KernelCaseShrinking, KeysPastATileWithCausalKeepBoth) {
  const KernelCase c = Shrink([](const KernelCase& c) {
    return c.problem.kv_len > 32 && c.problem.causal;
  });
  EXPECT_EQ(c.problem.kv_len, 33);
  ExpectMinimalBut(c, {"kv_len", "causal"});
}

TEST(KernelCaseShrinking, HalfPrecisionWithSoftcapKeepsBoth) {
  const KernelCase c = Shrink([](const KernelCase& c) {
    return c.problem.output_dtype == DType::kF16 && c.problem.softcap > 0;
  });
  EXPECT_EQ(c.problem.output_dtype, DType::kF16);
  ExpectMinimalBut(c, {"dtype", "softcap"});
}

TEST(KernelCaseShrinking, GroupedQueryHeadsKeepTwoQueryHeadsOnOneKvHead) {
  const KernelCase c = Shrink([](const KernelCase& c) {
    return c.problem.num_heads > c.problem.num_kv_heads;
  });
  EXPECT_EQ(c.problem.num_heads, 2);
  EXPECT_EQ(c.problem.num_kv_heads, 1);
  ExpectMinimalBut(c, {"heads"});
}

TEST(KernelCaseShrinking, AHugePositionKeepsOnlyThePositionsAndOneKey) {
  // A query at 2^40 or later needs the offset 2^40 and a key for the newest query to be at.
  const KernelCase c = Shrink([](const KernelCase& c) {
    for (int64_t q : c.problem.q_positions) {
      if (q >= (int64_t{1} << 40)) return true;
    }
    return false;
  });
  EXPECT_EQ(c.problem.kv_len, 1);
  ExpectMinimalBut(c, {"positions", "kv_len"});
}

bool AnyNan(const std::vector<float>& values) {
  return std::any_of(values.begin(), values.end(), [](float x) { return std::isnan(x); });
}

TEST(KernelCaseShrinking, ANanQueryKeepsOnlyTheSpecialValue) {
  const KernelCase c = Shrink([](const KernelCase& c) { return AnyNan(c.problem.q); });
  ExpectMinimalBut(c, {"specials"});
}

TEST(KernelCaseShrinking, ANanValueAtAMaskedKeyKeepsOneKey) {
  const KernelCase c =
      Shrink([](const KernelCase& c) { return c.mask.has_value() && AnyNan(c.problem.v); });
  EXPECT_EQ(c.problem.kv_len, 1);
  EXPECT_EQ(c.problem.mask_batch, 1);
  EXPECT_EQ(c.problem.mask_heads, 1);
  ExpectMinimalBut(c, {"kv_len", "mask", "specials"});
}

TEST(KernelCaseShrinking, AMaskKeepsOnlyTheMask) {
  const KernelCase c = Shrink([](const KernelCase& c) { return c.mask.has_value(); });
  EXPECT_EQ(c.problem.mask_batch, 1);
  EXPECT_EQ(c.problem.mask_heads, 1);
  EXPECT_TRUE(Plain(*c.mask));
  ExpectMinimalBut(c, {"mask"});
}

}  // namespace
}  // namespace kvcheck::properties
