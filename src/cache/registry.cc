#include "src/cache/registry.h"

#include <vector>

#include "src/cache/concat_cache.h"
#include "src/cache/interleaved_cache.h"
#include "src/cache/paged_cache.h"
#include "src/cache/prealloc_cache.h"
#include "src/cache/ring_cache.h"
#include "src/cache/scattered_cache.h"

namespace kvcheck {
namespace {

// name, summary, default config {initial_capacity, window}, windowed, amortized growth,
// per-row, factory. Built on first use, not at static initialisation (CacheStrategy holds a
// std::function, so the table is dynamically initialised): a benchmark or test that registers
// one case per strategy from its own static initialiser must not find it still empty.
const absl::Span<const CacheStrategy> Strategies() {
  static const std::vector<CacheStrategy>* const table = new std::vector<CacheStrategy>{
    {"prealloc", "lazy buffer, in-place writes, geometric growth, views", {4, 0}, false, true,
     false, &PreallocCache::Create},
    {"concat", "cat per append, contiguous results", {0, 0}, false, false, false,
     &ConcatCache::Create},
    {"ring", "sliding window of W slots, writes wrap", {0, 8}, true, true, false,
     &RingCache::Create},
    {"interleaved", "one buffer, [pos][kv_head][K | V], geometric growth", {0, 0}, false, true,
     false, &InterleavedCache::Create},
    {"scattered", "per-row rings, rows advance independently", {0, 8}, true, true, true,
     &ScatteredCache::Create},
    {"paged", "block table of 16-token blocks, copy-on-write per block, prefix sharing on fork",
     {0, 0}, false, true, true, &PagedCache::Create},
  };
  return *table;
}

}  // namespace

absl::Span<const CacheStrategy> CacheStrategies() { return Strategies(); }

const CacheStrategy* FindCacheStrategy(const std::string& name) {
  for (const CacheStrategy& strategy : Strategies()) {
    if (name == strategy.name) return &strategy;
  }
  return nullptr;
}

}  // namespace kvcheck
