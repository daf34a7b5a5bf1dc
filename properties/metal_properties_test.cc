// Runs the Metal kernel laws (properties/metal_properties.h) through the SIMT emulator.
#include "properties/metal_properties.h"

#include <iostream>

#include "gtest/gtest.h"

namespace kvcheck::properties {
namespace {

class MetalPropertyTest : public ::testing::TestWithParam<PropertySpec> {};

TEST_P(MetalPropertyTest, Holds) {
  const PropertyOutcome outcome = RunProperty(GetParam(), RunOptionsFromEnvironment());
  std::cout << outcome.name << ": " << outcome.cases << " cases, " << outcome.seconds << " s\n"
            << FormatDistribution(outcome);
  EXPECT_TRUE(outcome.passed) << outcome.message << "\n" << outcome.replay;
}

INSTANTIATE_TEST_SUITE_P(All, MetalPropertyTest, ::testing::ValuesIn(MetalProperties()),
                         [](const ::testing::TestParamInfo<PropertySpec>& info) {
                           return info.param.name.substr(info.param.name.find('/') + 1);
                         });

}  // namespace
}  // namespace kvcheck::properties
