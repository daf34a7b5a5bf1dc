// WithStaticCount: every run-time count in [1, kMax] reaches f once, as that compile-time
// count; a count outside aborts instead of running no kernel.
#include <vector>

#include "gtest/gtest.h"
#include "hwy/highway.h"
// The static target only: what is tested is the dispatch, not the target.
#include "src/base/static_count-inl.h"

namespace kvcheck {
namespace {

template <int kMax>
std::vector<int> CountsSeen(int n) {
  std::vector<int> seen;
  HWY_NAMESPACE::WithStaticCount<kMax>(n, [&](auto count) {
    static_assert(decltype(count)::value >= 1 && decltype(count)::value <= kMax);
    seen.push_back(decltype(count)::value);
  });
  return seen;
}

TEST(StaticCountTest, EveryCountReachesItsInstantiationOnce) {
  for (int n = 1; n <= 6; ++n) EXPECT_EQ(CountsSeen<6>(n), std::vector<int>{n}) << n;
  EXPECT_EQ(CountsSeen<1>(1), std::vector<int>{1});
}

TEST(StaticCountDeathTest, CountOutsideTheRangeAborts) {
  EXPECT_DEATH(CountsSeen<4>(0), "n >= 1 && n <= kMax");
  EXPECT_DEATH(CountsSeen<4>(5), "n >= 1 && n <= kMax");
}

}  // namespace
}  // namespace kvcheck
