#include "src/base/thread_pool.h"

#include <unistd.h>

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

ThreadPool& SharedThreadPool(int num_threads) {
  KV_CHECK(num_threads >= 1 && num_threads <= 256);
  static std::mutex* mutex = new std::mutex();
  static auto* pools = new std::map<int, std::unique_ptr<ThreadPool>>();
  static pid_t owner = getpid();
  if (getpid() != owner) {
    // A forked child (the suite runs each case in one): the pools' workers exist only in the
    // parent, and their mutexes may have been held by them at the fork. Start afresh; the old
    // objects are leaked, since destroying them would join threads that do not exist here.
    mutex = new std::mutex();
    pools = new std::map<int, std::unique_ptr<ThreadPool>>();
    owner = getpid();
  }
  std::lock_guard<std::mutex> lock(*mutex);
  std::unique_ptr<ThreadPool>& pool = (*pools)[num_threads];
  if (pool == nullptr) pool = std::make_unique<ThreadPool>(num_threads);
  return *pool;
}

}  // namespace kvcheck
