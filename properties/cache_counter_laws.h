// File: cache_counter_laws.h
// The counter laws of CacheCounters (src/cache/kv_cache.h), between two observations of one
// cache around a command: the cache state machine and the cache_ops fuzzer check every
// branch with them after every command.
#ifndef KVCHECK_PROPERTIES_CACHE_COUNTER_LAWS_H_
#define KVCHECK_PROPERTIES_CACHE_COUNTER_LAWS_H_

#include <cstdint>
#include <string>

#include "src/cache/kv_cache.h"

namespace kvcheck::properties {

// What a cache reports about its storage at one moment.
struct CounterObservation {
  CacheCounters counters;
  int64_t capacity = 0;
};

CounterObservation ObserveCounters(const KvCache& cache);

// What the laws need to know about the command and the cache.
struct CounterLawContext {
  // The command acted on this cache: appended to it, reset it, or made it (a Fork acts on the
  // new cache, which starts from its parent's observation). Any other cache keeps its counters
  // and capacity exactly.
  bool acted = false;
  // CacheStrategy::amortized_growth.
  bool amortized_growth = false;
  // A Fork since the cache's last Reset (its own or an ancestor's): its buffers may be shared,
  // so a write may copy them.
  bool may_share_buffers = false;
};

// "" when the counters went from `was` to `now` as the laws allow, else the law broken,
// followed by both observations:
//   - bytes allocated, appended and copied never go down;
//   - a cache the command did not act on reports exactly what it did;
//   - the acted cache copied only into buffers it allocated in the command, and holds only
//     what it held before or allocated since (an append may grow more than once, copying what
//     it wrote earlier in the same append, so copies are not bounded by what it held);
//   - growth copies come only with a larger capacity; a cache holding nothing allocated
//     nothing;
//   - with amortised growth and no shared buffers: no copies but growth's, and while the
//     capacity stays the same (and is not 0), no copies and no allocation it does not still
//     hold (no buffer replaced without growing).
std::string DescribeCounterLawBreak(const CounterObservation& was, const CounterObservation& now,
                                    const CounterLawContext& context);

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_CACHE_COUNTER_LAWS_H_
