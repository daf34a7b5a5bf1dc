// File: thread_pool.h
// ThreadPool: a fixed set of worker threads that run ParallelFor loops.
//
// Items are claimed dynamically, but every item is computed entirely by one thread, so a
// kernel whose items are independent gives bitwise identical results however the items land
// on threads. The calling thread works too: a pool of N threads starts N - 1 workers.
// ParallelFor calls on one pool must not overlap (kernels call it from one thread at a time).
//
// Workers spin briefly (about 50 us) before sleeping on the condition variable, and so does
// the caller waiting for them: a decode step issues dozens of short loops back to back (one
// per matrix-vector product), and a futex wake-up per loop cost more than the loop itself.
// The mutex is taken only by a thread about to sleep and by one that must wake a sleeper:
// a loop is started by publishing its generation, and a spinning worker starts on seeing it.
// When every loop took the mutex to start and to finish, the worker's and the caller's turns
// on it collided: an empty two-thread loop took 0.70 us against 0.20 now, a loop of four
// 2 us items 5.98 against 5.65 us (bench/thread_pool_benchmark, Zen 2 VM, four alternating
// pairs, 2026-12-04), and two-thread generation (prealloc) read 80-83% of its paired limit
// (median 81%) against 79-82% (median 80.5%; eight alternating pairs).
#ifndef KVCHECK_SRC_BASE_THREAD_POOL_H_
#define KVCHECK_SRC_BASE_THREAD_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kvcheck {

class ThreadPool {
 public:
  // REQUIRES: num_threads >= 1.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(i) for every i in [0, count), on all threads; returns when all are done.
  void ParallelFor(int64_t count, const std::function<void(int64_t)>& fn);

 private:
  void WorkerLoop();
  void RunItems();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_;
  std::condition_variable done_;
  const std::function<void(int64_t)>* fn_ = nullptr;
  int64_t count_ = 0;
  std::atomic<int64_t> next_{0};
  std::atomic<int> busy_workers_{0};
  std::atomic<uint64_t> generation_{0};  // bumped to start a loop
  // Changed under mutex_ around a wait, read without it (sequentially consistent, like
  // generation_ and busy_workers_, so that a sleeper either sees the change it waits for or
  // is seen by the thread that makes it).
  std::atomic<int> sleeping_workers_{0};
  std::atomic<bool> caller_sleeping_{false};
  std::atomic<bool> stopping_{false};
};

// The most threads a shared pool has: the bound every num_threads option that runs on
// SharedThreadPool checks.
inline constexpr int kMaxSharedPoolThreads = 256;

// A process-wide pool with `num_threads` threads (created on first use, kept for reuse).
// Safe to use in a child forked while pools existed: the child gets pools of its own.
// REQUIRES: 1 <= num_threads <= kMaxSharedPoolThreads (checked).
ThreadPool& SharedThreadPool(int num_threads);

}  // namespace kvcheck

#endif  // KVCHECK_SRC_BASE_THREAD_POOL_H_
