// Soundness of the attention error bound over 10,000 adversarial problems (fewer under the
// sanitizer configs) (prints the
// observed/bound ratios: the tightness evidence).
#include "properties/bound_soundness.h"
#include "properties/oracle_agreement.h"

#include <iostream>

#include "gtest/gtest.h"
#include "properties/property_runner.h"

namespace kvcheck::properties {
namespace {

TEST(BoundSoundness, StraightforwardF32AttentionNeverExceedsTheBound) {
  SoundnessStats stats;
  const RunOptions options = RunOptionsFromEnvironment();
  const PropertySpec spec = BoundSoundnessProperty(&stats, 10000);
  const PropertyOutcome outcome = RunProperty(spec, options);
  std::cout << outcome.name << ": " << outcome.cases << " cases in " << outcome.seconds << " s\n"
            << stats.Report();
  EXPECT_TRUE(outcome.passed) << outcome.message << "\n" << outcome.replay;
  // 10,000 by default; sanitizer configs scale the count down (KVCHECK_CASE_SCALE).
  EXPECT_EQ(outcome.cases, CasesFor(spec, options));
}

// The fast oracle the suite uses against the 50-digit one and a 100-digit ground truth.
TEST(OracleAgreement, DoubleDoubleAndRealMeetTheirGuarantees) {
  const PropertySpec spec = OracleAgreementProperty(400);
  const PropertyOutcome outcome = RunProperty(spec, RunOptionsFromEnvironment());
  std::cout << outcome.name << ": " << outcome.cases << " cases in " << outcome.seconds << " s\n"
            << FormatDistribution(outcome);
  EXPECT_TRUE(outcome.passed) << outcome.message << "\n" << outcome.replay;
}

}  // namespace
}  // namespace kvcheck::properties
