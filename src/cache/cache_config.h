// File: cache_config.h
// CacheConfig: the knobs a cache strategy is built with (see registry.h).
#ifndef KVCHECK_SRC_CACHE_CACHE_CONFIG_H_
#define KVCHECK_SRC_CACHE_CACHE_CONFIG_H_

#include <cstdint>

namespace kvcheck {

struct CacheConfig {
  // Slots allocated by the first append before any growth (preallocating strategies).
  int64_t initial_capacity = 0;
  // Window / context size W for sliding-window strategies (ring, scattered); must be >= 1
  // there, ignored elsewhere.
  int64_t window = 0;
  // The most bytes the cache's buffers may hold at once (K and V, all blocks; a buffer
  // shared with a fork counts in both). 0: the storage limit (src/tensor/storage.h).
  int64_t max_bytes = 0;
  // Threads a strategy may use for a copy of its whole contents (concat's copy of its history
  // each append), 1..kMaxSharedPoolThreads (checked where used): with more than one, such a
  // copy runs on SharedThreadPool(num_threads) (src/base/thread_pool.h), so Append must then
  // not be called from inside one of that pool's loops. The contents are the same bits either
  // way.
  int num_threads = 1;
};

}  // namespace kvcheck

#endif  // KVCHECK_SRC_CACHE_CACHE_CONFIG_H_
