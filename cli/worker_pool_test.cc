#include "cli/worker_pool.h"

#include <signal.h>
#include <unistd.h>

#include <map>
#include <string>

#include "gtest/gtest.h"

namespace kvcheck::cli {
namespace {

// Runs 5 jobs: each reports progress and returns "job <i>" (job 3 dies when `crash`).
std::map<size_t, std::string> RunFive(int workers, bool crash, std::map<size_t, int>* progress) {
  std::map<size_t, std::string> results;
  WorkerPoolCallbacks callbacks;
  callbacks.run = [crash](size_t i, const std::function<void(const std::string&)>& report) {
    report("half");
    if (crash && i == 3) raise(SIGKILL);
    return std::string("job ") + std::to_string(i) + std::string(100000, 'x');
  };
  callbacks.on_progress = [progress](size_t i, const std::string& text) {
    if (text == "half") ++(*progress)[i];
  };
  callbacks.on_done = [&results](size_t i, absl::StatusOr<std::string> result) {
    results[i] = result.ok() ? result->substr(0, 5) : std::string(result.status().message());
  };
  EXPECT_EQ(RunInWorkers(5, workers, callbacks), 5u);
  return results;
}

TEST(WorkerPool, SameResultsForOneWorkerOrMany) {
  std::map<size_t, int> one_progress, many_progress;
  const auto one = RunFive(1, false, &one_progress);
  const auto many = RunFive(3, false, &many_progress);
  EXPECT_EQ(one, many);
  EXPECT_EQ(one.at(4), "job 4");
  EXPECT_EQ(one_progress, many_progress);
  EXPECT_EQ(many_progress.size(), 5u);
}

TEST(WorkerPool, AWorkerThatDiesIsReportedNotLost) {
  std::map<size_t, int> progress;
  const auto results = RunFive(2, true, &progress);
  EXPECT_EQ(results.at(3), "the worker process was killed by signal 9 before sending its result");
  EXPECT_EQ(results.at(4), "job 4");
}

TEST(WorkerPool, StopsStartingWhenTold) {
  int started = 0;
  WorkerPoolCallbacks callbacks;
  callbacks.run = [](size_t, const std::function<void(const std::string&)>&) { return "r"; };
  callbacks.on_done = [](size_t, absl::StatusOr<std::string>) {};
  callbacks.may_start = [&started] { return started++ < 2; };
  EXPECT_EQ(RunInWorkers(5, 2, callbacks), 2u);
}

}  // namespace
}  // namespace kvcheck::cli
