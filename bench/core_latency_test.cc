#include "bench/core_latency.h"

#include <sched.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "gtest/gtest.h"

namespace kvcheck::bench {
namespace {

// Every CPU of the process's set, once, ascending.
TEST(AllowedCpus, ListsTheProcessCpuSet) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  const std::vector<int> cpus = AllowedCpus();
  EXPECT_EQ(static_cast<int>(cpus.size()), CPU_COUNT(&allowed));
  EXPECT_TRUE(std::is_sorted(cpus.begin(), cpus.end()));
  EXPECT_EQ(std::adjacent_find(cpus.begin(), cpus.end()), cpus.end());
  for (int cpu : cpus) EXPECT_TRUE(CPU_ISSET(cpu, &allowed)) << cpu;
}

TEST(CoreToCoreNanoseconds, RefusesOneCpuTwice) {
  EXPECT_EQ(CoreToCoreNanoseconds(0, 0), std::nullopt);
}

TEST(CoreToCoreNanoseconds, RefusesCpusOutsideTheSet) {
  EXPECT_EQ(CoreToCoreNanoseconds(-1, 0), std::nullopt);
  EXPECT_EQ(CoreToCoreNanoseconds(0, CPU_SETSIZE), std::nullopt);
  EXPECT_EQ(CoreToCoreNanoseconds(CPU_SETSIZE + 5, 0), std::nullopt);
}

TEST(CoreToCoreNanoseconds, RefusesACpuThisProcessMayNotUse) {
  const std::vector<int> cpus = AllowedCpus();
  ASSERT_FALSE(cpus.empty());
  int forbidden = -1;
  for (int cpu = 0; cpu < CPU_SETSIZE && forbidden < 0; ++cpu) {
    if (std::find(cpus.begin(), cpus.end(), cpu) == cpus.end()) forbidden = cpu;
  }
  if (forbidden < 0) GTEST_SKIP() << "every CPU of the set is allowed";
  EXPECT_EQ(CoreToCoreNanoseconds(cpus[0], forbidden), std::nullopt);
  EXPECT_EQ(CoreToCoreNanoseconds(forbidden, cpus[0]), std::nullopt);
}

// A hand-over between two allowed CPUs takes tens to a few hundred nanoseconds on the
// machines measured; the bounds catch a wrong unit or count (seconds, round trips), not
// the machine. The test runs alone (BUILD: exclusive), so the other CPU is free to answer.
TEST(CoreToCoreNanoseconds, MeasuresTwoAllowedCpus) {
  const std::vector<int> cpus = AllowedCpus();
  if (cpus.size() < 2) GTEST_SKIP() << "one CPU allowed";
  const std::optional<double> nanoseconds = CoreToCoreNanoseconds(cpus[0], cpus[1]);
  ASSERT_TRUE(nanoseconds.has_value());
  EXPECT_GT(*nanoseconds, 1.0);
  EXPECT_LT(*nanoseconds, 100000.0);
}

}  // namespace
}  // namespace kvcheck::bench
