// The interleaved zero-capacity defect writes past its allocation. This test binary is linked
// with AddressSanitizer (see BUILD.bazel) in every configuration: the state machine, running
// each case in a forked child, must kill the defect by a crash (ASan's report ends the child),
// shrink it, and quote the heap-buffer-overflow report in the counterexample, while this
// process carries on.
#include "defects/defect_kill.h"
#include "defects/defect_registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvcheck::defects {
namespace {

using ::testing::HasSubstr;

TEST(OutOfBoundsDefect, IsKilledAsACrashWithTheSanitizerReport) {
  const Defect* defect = FindDefect("interleaved_zero_capacity_oob");
  ASSERT_NE(defect, nullptr);
  properties::RunOptions options = properties::RunOptionsFromEnvironment();
  options.isolation.mode = properties::Isolation::kFork;
  const KillResult result = RunKill(*defect, options);
  std::cout << FormatKillRow(result) << result.message << "\n";
  EXPECT_TRUE(result.killed);
  EXPECT_EQ(result.end, properties::CaseEnd::kCrash);
  EXPECT_THAT(result.message, HasSubstr("AddressSanitizer: heap-buffer-overflow"));
  EXPECT_THAT(result.message, HasSubstr("last step: command"));
}

}  // namespace
}  // namespace kvcheck::defects
