// The interleaved zero-capacity defect writes past its allocation. This test binary is linked
// with AddressSanitizer (see BUILD.bazel) in every configuration, and the state machine run
// in a death test must end in ASan's heap-buffer-overflow report.
#include "defects/defect_kill.h"
#include "defects/defect_registry.h"
#include "gtest/gtest.h"

namespace kvcheck::defects {
namespace {

TEST(OutOfBoundsDefect, AddressSanitizerReportsTheWriteUnderTheStateMachine) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const Defect* defect = FindDefect("interleaved_zero_capacity_oob");
  ASSERT_NE(defect, nullptr);
  EXPECT_DEATH(
      {
        properties::RunOptions options;
        RunKill(*defect, options);
      },
      "AddressSanitizer: heap-buffer-overflow");
}

}  // namespace
}  // namespace kvcheck::defects
