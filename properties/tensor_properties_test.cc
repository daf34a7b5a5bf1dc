// Runs every tensor-op property (properties/tensor_properties.h) as a gtest case.
#include "properties/tensor_properties.h"

#include <iostream>

#include "gtest/gtest.h"
#include "properties/property_runner.h"

namespace kvcheck::properties {
namespace {

class TensorPropertyTest : public ::testing::TestWithParam<PropertySpec> {};

TEST_P(TensorPropertyTest, Holds) {
  const PropertyOutcome outcome = RunProperty(GetParam(), RunOptionsFromEnvironment());
  std::cout << outcome.name << ": " << outcome.cases << " cases in " << outcome.seconds << " s\n"
            << FormatDistribution(outcome);
  EXPECT_TRUE(outcome.passed) << outcome.message << "\n" << outcome.replay;
}

INSTANTIATE_TEST_SUITE_P(All, TensorPropertyTest, ::testing::ValuesIn(TensorProperties()),
                         [](const ::testing::TestParamInfo<PropertySpec>& info) {
                           std::string name = info.param.name.substr(info.param.name.find('/') + 1);
                           return name;
                         });

}  // namespace
}  // namespace kvcheck::properties
