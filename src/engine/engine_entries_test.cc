// FeaturesUsed: the bit of each feature a call uses, and only those. An engine's kernel entry
// refuses a call whose bits it did not declare, so a bit left out lets an undeclared feature
// through to an engine that ignores it.
#include "src/engine/engine_entries.h"

#include <cmath>

#include "gtest/gtest.h"

namespace kvcheck::engine {
namespace {

Tensor Zeros(std::initializer_list<int64_t> shape) { return *Tensor::Zeros(DType::kF32, shape); }

TEST(FeaturesUsedTest, EachFeatureSetsItsBitAlone) {
  const Tensor q = Zeros({1, 2, 3, 4}), k = Zeros({1, 2, 5, 4});
  EXPECT_EQ(FeaturesUsed(q, k, {}), 0u);
  struct Case {
    const char* what;
    AttentionParams params;
    uint32_t bit;
  };
  std::vector<Case> cases(9);
  cases[0] = {"scale", {}, kFeatureScale};
  cases[0].params.scale = 0.5f;
  cases[1] = {"softcap", {}, kFeatureSoftcap};
  cases[1].params.softcap = 30.0f;
  cases[2] = {"ALiBi", {}, kFeatureAlibi};
  cases[2].params.alibi_slopes = {-0.5f, -0.25f};
  cases[3] = {"causal", {}, kFeatureCausal};
  cases[3].params.causal = true;
  cases[4] = {"window", {}, kFeatureWindow};
  cases[4].params.window = 2;
  cases[5] = {"mask", {}, kFeatureMask};
  cases[5].params.mask = Zeros({1, 1, 3, 5});
  cases[6] = {"q positions alone", {}, kFeaturePositions};
  cases[6].params.q_positions = {4, 5, 6};
  cases[7] = {"kv positions alone", {}, kFeaturePositions};
  cases[7].params.kv_positions = {0, 1, 2, 3, 4};
  cases[8] = {"both positions", {}, kFeaturePositions};
  cases[8].params.q_positions = {4, 5, 6};
  cases[8].params.kv_positions = {0, 1, 2, 3, 4};
  for (const Case& c : cases) EXPECT_EQ(FeaturesUsed(q, k, c.params), c.bit) << c.what;
  // GQA: fewer KV heads than query heads; a softcap of 0 is none.
  EXPECT_EQ(FeaturesUsed(q, Zeros({1, 1, 5, 4}), {}), kFeatureGqa);
  AttentionParams no_softcap;
  no_softcap.softcap = 0.0f;
  EXPECT_EQ(FeaturesUsed(q, k, no_softcap), 0u);
}

}  // namespace
}  // namespace kvcheck::engine
