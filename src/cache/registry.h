// File: registry.h
// The cache-strategy registry: one table (registry.cc) mapping each strategy's name to its
// factory, the configuration the suite exercises it with, and the laws that apply to it.
//
// Adding a strategy is one file pair (a KvCache subclass with a static Create) plus one line
// in the table; the typed tests, the state machine, the fuzzers and kvcheck all iterate the
// table. There is no static self-registration.
#ifndef KVCHECK_SRC_CACHE_REGISTRY_H_
#define KVCHECK_SRC_CACHE_REGISTRY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "src/cache/cache_config.h"
#include "src/cache/kv_cache.h"

namespace kvcheck {

struct CacheStrategy {
  const char* name;
  const char* summary;
  // The configuration kvcheck and the named tests use; the properties also vary it.
  CacheConfig default_config;
  // The visible set is the last config.window tokens (otherwise every token since reset).
  bool windowed;
  // Growth copies amortised O(1): bytes_growth_copied <= 3 * bytes_appended.
  bool amortized_growth;
  // Takes inactive rows in AppendActive (rows advance independently).
  bool per_row;
  // Builds a cache; errors are kInvalidArgument for a configuration the strategy rejects.
  absl::StatusOr<std::unique_ptr<KvCache>> (*create)(const CacheConfig& config);
};

// Every registered strategy, in a fixed order.
absl::Span<const CacheStrategy> CacheStrategies();

// The strategy called `name`, or nullptr.
const CacheStrategy* FindCacheStrategy(const std::string& name);

}  // namespace kvcheck

#endif  // KVCHECK_SRC_CACHE_REGISTRY_H_
