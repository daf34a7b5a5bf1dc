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
    auto started = [&] {
      return stopping_.load(std::memory_order_acquire) ||
             generation_.load(std::memory_order_acquire) != seen;
    };
    SpinFor(started);
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_.wait(lock, started);
      if (stopping_) return;
      seen = generation_.load();
    }
    RunItems();
    if (busy_workers_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // Taking the lock orders this notify after the caller's check of busy_workers_.
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
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fn_ = &fn;
    count_ = count;
    next_.store(0);
    busy_workers_.store(static_cast<int>(workers_.size()));
    generation_.fetch_add(1, std::memory_order_release);
  }
  start_.notify_all();
  RunItems();
  auto done = [&] { return busy_workers_.load(std::memory_order_acquire) == 0; };
  if (!SpinFor(done)) {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, done);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  fn_ = nullptr;
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
