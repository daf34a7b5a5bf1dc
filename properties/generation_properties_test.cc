// Runs every generation property (properties/generation_properties.h) as a gtest case and
// prints the distribution of the cases each one generated.
#include "properties/generation_properties.h"

#include <iostream>

#include "gtest/gtest.h"
#include "properties/property_runner.h"

namespace kvcheck::properties {
namespace {

class GenerationPropertyTest : public ::testing::TestWithParam<PropertySpec> {};

TEST_P(GenerationPropertyTest, Holds) {
  const PropertyOutcome outcome = RunProperty(GetParam(), RunOptionsFromEnvironment());
  std::cout << outcome.name << ": " << outcome.cases << " cases, " << outcome.seconds << " s\n"
            << FormatDistribution(outcome);
  EXPECT_TRUE(outcome.passed) << outcome.message << "\n" << outcome.replay;
}

INSTANTIATE_TEST_SUITE_P(All, GenerationPropertyTest, ::testing::ValuesIn(GenerationProperties()),
                         [](const ::testing::TestParamInfo<PropertySpec>& info) {
                           std::string name = info.param.name.substr(11);  // "generation/"
                           for (char& c : name) {
                             if (c == '/') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace kvcheck::properties
