#include "src/cache/registry.h"

#include "src/cache/concat_cache.h"
#include "src/cache/interleaved_cache.h"
#include "src/cache/paged_cache.h"
#include "src/cache/prealloc_cache.h"
#include "src/cache/ring_cache.h"
#include "src/cache/scattered_cache.h"

namespace kvcheck {
namespace {

// name, summary, default config {initial_capacity, window}, windowed, amortized growth,
// per-row, factory.
const CacheStrategy kStrategies[] = {
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

}  // namespace

absl::Span<const CacheStrategy> CacheStrategies() { return kStrategies; }

const CacheStrategy* FindCacheStrategy(const std::string& name) {
  for (const CacheStrategy& strategy : kStrategies) {
    if (name == strategy.name) return &strategy;
  }
  return nullptr;
}

}  // namespace kvcheck
