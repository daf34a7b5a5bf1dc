// File: worker_pool.h
// Runs a run's jobs (properties, defect kills) on `workers` worker processes at once.
//
// Workers are processes, not threads: RapidCheck keeps its generation state (random source,
// size, shrink scope) in process-wide statics, so two properties cannot generate in one
// process at the same time. Each job runs in a child forked for it, which sends its progress
// and its result back over a pipe; a job's result is bytes (job_result.h), decoded and merged
// in the parent in the jobs' order, so the run's output is the same for any worker count.
// With one worker the jobs run in this process, one after another (what a debugger wants).
#ifndef KVCHECK_CLI_WORKER_POOL_H_
#define KVCHECK_CLI_WORKER_POOL_H_

#include <cstddef>
#include <functional>
#include <string>

#include "absl/status/statusor.h"

namespace kvcheck::cli {

struct WorkerPoolCallbacks {
  // Runs job `index` and returns its result; `progress` sends a line of progress text to the
  // parent (at most a few a second are worth sending).
  std::function<std::string(size_t index, const std::function<void(const std::string&)>& progress)>
      run;
  // Called in the parent, in any order, while jobs run.
  std::function<void(size_t index, const std::string& progress)> on_progress;
  // Called in the parent when job `index` ends: its result, or why there is none (the worker
  // died: a bug of kvcheck's, not of the code under test, which runs in per-case children).
  std::function<void(size_t index, absl::StatusOr<std::string> result)> on_done;
  // Asked before each job starts; false leaves it and every later job unstarted.
  std::function<bool()> may_start;
};

// Runs jobs 0..count-1, starting them in order; returns how many were started.
size_t RunInWorkers(size_t count, int workers, const WorkerPoolCallbacks& callbacks);

}  // namespace kvcheck::cli

#endif  // KVCHECK_CLI_WORKER_POOL_H_
