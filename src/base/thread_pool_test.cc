#include "src/base/thread_pool.h"

#include <atomic>
#include <vector>

#include "gtest/gtest.h"

namespace kvcheck {
namespace {

TEST(ThreadPool, RunsEveryItemExactlyOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (int64_t count : {0, 1, 2, 7, 1000}) {
      std::vector<std::atomic<int>> hits(count);
      pool.ParallelFor(count, [&](int64_t i) { hits[i].fetch_add(1); });
      for (int64_t i = 0; i < count; ++i) EXPECT_EQ(hits[i].load(), 1) << threads << " " << i;
    }
  }
}

TEST(ThreadPool, SharedPoolsAreReused) {
  EXPECT_EQ(&SharedThreadPool(2), &SharedThreadPool(2));
  EXPECT_EQ(SharedThreadPool(3).num_threads(), 3);
}

}  // namespace
}  // namespace kvcheck
