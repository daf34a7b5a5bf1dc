#include "src/base/thread_pool.h"

#include <pthread.h>

#include <map>
#include <memory>

#include "src/base/check.h"

namespace kvcheck {
namespace {

constexpr int kSpinIterations = 2000;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins until pred() or the budget runs out; returns pred().
template <typename Pred>
bool SpinFor(Pred pred) {
  for (int i = 0; i < kSpinIterations; ++i) {
    if (pred()) return true;
    CpuRelax();
  }
  return pred();
}

}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  KV_CHECK(num_threads >= 1);
  for (int t = 1; t < num_threads; ++t) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  start_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::RunItems() {
  for (int64_t i = next_.fetch_add(1); i < count_; i = next_.fetch_add(1)) (*fn_)(i);
}

void ThreadPool::WorkerLoop() {
  uint64_t seen = 0;
  while (true) {
    auto started = [&] { return stopping_.load() || generation_.load() != seen; };
    if (!SpinFor(started)) {
      // Counted before the last check of `started` (inside wait): a caller that publishes a
      // loop after that check sees the count and notifies under the mutex, which this thread
      // holds until it sleeps.
      std::unique_lock<std::mutex> lock(mutex_);
      sleeping_workers_.fetch_add(1);
      start_.wait(lock, started);
      sleeping_workers_.fetch_sub(1);
    }
    if (stopping_.load()) return;
    seen = generation_.load();
    RunItems();
    // The same handshake with a caller that stopped spinning (ParallelFor).
    if (busy_workers_.fetch_sub(1) == 1 && caller_sleeping_.load()) {
      std::lock_guard<std::mutex> lock(mutex_);
      done_.notify_one();
    }
  }
}

void ThreadPool::ParallelFor(int64_t count, const std::function<void(int64_t)>& fn) {
  if (count <= 0) return;
  if (workers_.empty() || count == 1) {
    for (int64_t i = 0; i < count; ++i) fn(i);
    return;
  }
  // No worker reads these until it sees the new generation: the last loop's workers have all
  // finished with them (busy_workers_ reached 0 before that loop returned).
  fn_ = &fn;
  count_ = count;
  next_.store(0, std::memory_order_relaxed);
  busy_workers_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1);
  if (sleeping_workers_.load() > 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    start_.notify_all();
  }
  RunItems();
  auto done = [&] { return busy_workers_.load() == 0; };
  if (!SpinFor(done)) {
    std::unique_lock<std::mutex> lock(mutex_);
    caller_sleeping_.store(true);
    done_.wait(lock, done);
    caller_sleeping_.store(false);
  }
}

namespace {

// SharedThreadPool's pools. A forked child (the suite runs each case in one) starts afresh:
// the parent's workers do not exist there, and their mutexes may have been held by them at
// the fork. The old objects are leaked, since destroying them would join threads that do not
// exist in the child.
struct SharedPools {
  std::mutex mutex;
  std::map<int, std::unique_ptr<ThreadPool>> pools;
  // Lock-free lookups of the pools made so far: a decode step asks for its pool once per
  // matrix-vector product (61 times per token for GPT-2 124M), and the lookup this replaced
  // (a getpid() system call, to notice a fork, and the mutex) held about 0.15% of a
  // two-thread step's samples on the Zen 4 VM (perf, 2026-12-05).
  std::atomic<ThreadPool*> made[kMaxSharedPoolThreads + 1] = {};
};
std::atomic<SharedPools*> shared_pools{nullptr};

void ForgetPoolsInChild() { shared_pools.store(nullptr); }

SharedPools& Pools() {
  SharedPools* pools = shared_pools.load(std::memory_order_acquire);
  if (pools != nullptr) return *pools;
  static std::once_flag at_fork;
  std::call_once(at_fork, [] { pthread_atfork(nullptr, nullptr, ForgetPoolsInChild); });
  // Two threads may race here only in a process's first call (or a child's); the loser's
  // object is dropped before anyone sees it.
  auto fresh = std::make_unique<SharedPools>();
  if (shared_pools.compare_exchange_strong(pools, fresh.get(), std::memory_order_acq_rel)) {
    return *fresh.release();
  }
  return *pools;
}

}  // namespace

ThreadPool& SharedThreadPool(int num_threads) {
  KV_CHECK(num_threads >= 1 && num_threads <= kMaxSharedPoolThreads);
  SharedPools& shared = Pools();
  if (ThreadPool* pool = shared.made[num_threads].load(std::memory_order_acquire)) return *pool;
  std::lock_guard<std::mutex> lock(shared.mutex);
  std::unique_ptr<ThreadPool>& pool = shared.pools[num_threads];
  if (pool == nullptr) pool = std::make_unique<ThreadPool>(num_threads);
  shared.made[num_threads].store(pool.get(), std::memory_order_release);
  return *pool;
}

}  // namespace kvcheck
