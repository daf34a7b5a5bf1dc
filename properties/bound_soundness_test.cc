// Soundness of the attention error bound over 10,000 adversarial problems (prints the
// observed/bound ratios: the tightness evidence).
#include "properties/bound_soundness.h"

#include <iostream>

#include "gtest/gtest.h"
#include "properties/property_runner.h"

namespace kvcheck::properties {
namespace {

TEST(BoundSoundness, StraightforwardF32AttentionNeverExceedsTheBound) {
  SoundnessStats stats;
  const PropertyOutcome outcome =
      RunProperty(BoundSoundnessProperty(&stats, 10000), RunOptionsFromEnvironment());
  std::cout << outcome.name << ": " << outcome.cases << " cases in " << outcome.seconds << " s\n"
            << stats.Report();
  EXPECT_TRUE(outcome.passed) << outcome.message << "\n" << outcome.replay;
  EXPECT_GE(outcome.cases, 10000);
}

}  // namespace
}  // namespace kvcheck::properties
