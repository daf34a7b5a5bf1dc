#include "src/base/thread_pool.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
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

// The handoffs the spinning skips: workers that went to sleep between loops (the gap is longer
// than their spin) and a caller that sleeps waiting for a slow item. A lost wake-up hangs.
TEST(ThreadPool, WakesSleepingWorkersAndASleepingCaller) {
  ThreadPool pool(3);
  for (int round = 0; round < 40; ++round) {
    std::this_thread::sleep_for(std::chrono::microseconds(round % 2 == 0 ? 300 : 1));
    std::vector<std::atomic<int>> hits(5);
    pool.ParallelFor(5, [&](int64_t i) {
      if (i == round % 5) std::this_thread::sleep_for(std::chrono::microseconds(300));
      hits[i].fetch_add(1);
    });
    for (int i = 0; i < 5; ++i) ASSERT_EQ(hits[i].load(), 1) << round << " " << i;
  }
}

// Many short loops back to back: each must see its own function and count, never the last
// loop's (the workers read them without a lock once the loop's generation is published).
TEST(ThreadPool, BackToBackLoopsSeeTheirOwnItems) {
  ThreadPool pool(2);
  for (int loop = 0; loop < 20000; ++loop) {
    const int64_t count = 1 + loop % 4;
    std::atomic<int64_t> sum{0};
    pool.ParallelFor(count, [&, loop](int64_t i) { sum.fetch_add(loop * 8 + i + 1); });
    ASSERT_EQ(sum.load(), loop * 8 * count + count * (count + 1) / 2) << loop;
  }
}

TEST(ThreadPool, SharedPoolsAreReused) {
  EXPECT_EQ(&SharedThreadPool(2), &SharedThreadPool(2));
  EXPECT_EQ(SharedThreadPool(3).num_threads(), 3);
}

// The suite runs each case in a forked child: a child of a process whose pools have running
// workers must get working pools of its own (the parent's workers do not exist in it).
TEST(ThreadPool, SharedPoolsWorkInAForkedChild) {
  std::atomic<int> sum{0};
  SharedThreadPool(3).ParallelFor(30, [&](int64_t i) { sum.fetch_add(static_cast<int>(i)); });
  ASSERT_EQ(sum.load(), 435);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::atomic<int> child_sum{0};
    SharedThreadPool(3).ParallelFor(30, [&](int64_t i) { child_sum.fetch_add(static_cast<int>(i)); });
    _exit(child_sum.load() == 435 && SharedThreadPool(3).num_threads() == 3 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  // And the parent's pool still works.
  sum = 0;
  SharedThreadPool(3).ParallelFor(30, [&](int64_t i) { sum.fetch_add(static_cast<int>(i)); });
  EXPECT_EQ(sum.load(), 435);
}

}  // namespace
}  // namespace kvcheck
