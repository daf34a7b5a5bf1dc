// Runs every cache property (properties/cache_properties.h) as a gtest case and prints the
// distribution of the events each state machine exercised.
#include "properties/cache_properties.h"

#include <iostream>

#include "gtest/gtest.h"
#include "properties/property_runner.h"

namespace kvcheck::properties {
namespace {

CacheMachineStatsMap& Stats() {
  static CacheMachineStatsMap* stats = new CacheMachineStatsMap();
  return *stats;
}

class CachePropertyTest : public ::testing::TestWithParam<PropertySpec> {};

TEST_P(CachePropertyTest, Holds) {
  const PropertyOutcome outcome = RunProperty(GetParam(), RunOptionsFromEnvironment());
  std::cout << outcome.name << ": " << outcome.cases << " cases, "
            << Stats()[outcome.name].commands << " commands, " << outcome.seconds << " s\n"
            << FormatDistribution(outcome);
  EXPECT_TRUE(outcome.passed) << outcome.message << "\n" << outcome.replay;
}

INSTANTIATE_TEST_SUITE_P(All, CachePropertyTest, ::testing::ValuesIn(CacheProperties(&Stats(), BuiltinSubject())),
                         [](const ::testing::TestParamInfo<PropertySpec>& info) {
                           std::string name = info.param.name.substr(6);  // drop "cache/"
                           for (char& c : name) {
                             if (c == '/') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace kvcheck::properties
