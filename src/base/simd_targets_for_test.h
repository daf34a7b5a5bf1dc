// File: simd_targets_for_test.h
// ForEachSimdTarget: runs a test's check once under every SIMD target Highway compiled and
// this CPU runs. Highway dispatches to the best target by default, so the others (and their
// scalar tails, narrower vectors and register counts) would go untested on a machine that
// has them.
#ifndef KVCHECK_SRC_BASE_SIMD_TARGETS_FOR_TEST_H_
#define KVCHECK_SRC_BASE_SIMD_TARGETS_FOR_TEST_H_

#include <cstdint>

#include "hwy/targets.h"

namespace kvcheck {

// Calls check(target_name) under each target in turn, then gives dispatch back to the best
// target (also when check returned early, as a failed gtest ASSERT inside it does).
template <typename Check>
void ForEachSimdTarget(const Check& check) {
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    check(hwy::TargetName(target));
  }
  hwy::SetSupportedTargetsForTest(0);
}

}  // namespace kvcheck

#endif  // KVCHECK_SRC_BASE_SIMD_TARGETS_FOR_TEST_H_
