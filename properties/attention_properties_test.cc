// Runs the attention kernel laws (properties/attention_properties.h) and prints the
// observed/bound ratios per kernel and dtype.
#include "properties/attention_properties.h"

#include <iostream>

#include "gtest/gtest.h"

namespace kvcheck::properties {
namespace {

KernelStatsMap& Stats() {
  static KernelStatsMap* stats = new KernelStatsMap();
  return *stats;
}

KernelStatsMap& EnvelopeStats() {
  static KernelStatsMap* stats = new KernelStatsMap();
  return *stats;
}

class AttentionPropertyTest : public ::testing::TestWithParam<PropertySpec> {};

TEST_P(AttentionPropertyTest, Holds) {
  const PropertyOutcome outcome = RunProperty(GetParam(), RunOptionsFromEnvironment());
  std::cout << outcome.name << ": " << outcome.cases << " cases, " << outcome.seconds << " s\n"
            << FormatDistribution(outcome);
  EXPECT_TRUE(outcome.passed) << outcome.message << "\n" << outcome.replay;
}

INSTANTIATE_TEST_SUITE_P(All, AttentionPropertyTest,
                         ::testing::ValuesIn(AttentionProperties(&Stats(), &EnvelopeStats(), BuiltinSubject())),
                         [](const ::testing::TestParamInfo<PropertySpec>& info) {
                           return info.param.name.substr(info.param.name.find('/') + 1);
                         });

class PrintRatios : public ::testing::Environment {
 public:
  void TearDown() override {
    std::cout << "\n" << FormatKernelStats(Stats()) << "\nPrecision envelope (error / allowed):\n"
              << FormatEnvelopeStats(EnvelopeStats());
  }
};
const auto* const print_ratios = ::testing::AddGlobalTestEnvironment(new PrintRatios);

}  // namespace
}  // namespace kvcheck::properties
