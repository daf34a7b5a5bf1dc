// generation/batched_rows sees the cache defects that break one batch row through another or
// a fork through its parent, with no cache law's help: each defective strategy alone, run
// through the decoders, fails the law; the correct strategies pass it.
#include <iostream>
#include <string>

#include "defects/defect_registry.h"
#include "gtest/gtest.h"
#include "properties/generation_properties.h"
#include "properties/property_runner.h"

namespace kvcheck {
using defects::Defect;
using defects::FindDefect;
namespace {

properties::PropertyOutcome RunOn(const CacheStrategy& strategy) {
  properties::Subject subject = properties::BuiltinSubject();
  subject.strategies = {strategy};
  const properties::PropertySpec spec = properties::BatchedRowsProperty(300, subject);
  properties::RunOptions options;
  return properties::RunProperty(spec, options);
}

class BatchedRowsKills : public ::testing::TestWithParam<std::string> {};

TEST_P(BatchedRowsKills, TheDefect) {
  const Defect* defect = FindDefect(GetParam());
  ASSERT_NE(defect, nullptr);
  const properties::PropertyOutcome outcome = RunOn(defect->strategy);
  EXPECT_FALSE(outcome.passed) << GetParam() << " passed generation/batched_rows in "
                               << outcome.cases << " cases";
  std::cout << GetParam() << ": " << outcome.message << "\n";
}

INSTANTIATE_TEST_SUITE_P(CacheDefects, BatchedRowsKills,
                         ::testing::Values("paged_shared_block_written_in_place",
                                           "paged_block_boundary_off_by_one",
                                           "prealloc_clone_shares_buffer"));

}  // namespace
}  // namespace kvcheck
