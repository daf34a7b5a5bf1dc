// File: registry.h
// The cache-strategy registry: one table (registry.cc) mapping each strategy's name to its
// factory, the configuration the suite exercises it with, and the laws that apply to it.
//
// Adding a strategy is one file pair (a KvCache subclass with a static Create) plus one line
// in the table; the typed tests, the state machine, the fuzzers and kvcheck all iterate the
// table. There is no static self-registration.
#ifndef KVCHECK_SRC_CACHE_REGISTRY_H_
#define KVCHECK_SRC_CACHE_REGISTRY_H_

#include <cstdint>
#include <functional>
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
  // A function object, so that a strategy of an external engine (src/engine/) can carry its
  // connection.
  std::function<absl::StatusOr<std::unique_ptr<KvCache>>(const CacheConfig& config)> create;

  // What the strategy supports, for strategies of external engines that declare less; every
  // built-in strategy supports everything. The properties generate only what is declared.
  bool forks = true;            // Fork() (the state machine's Fork command)
  bool resets = true;           // Reset()
  // capacity() and counters() follow kv_cache.h (the capacity checks, the growth law and the
  // storage-budget law apply only then).
  bool reports_storage = true;
  // The storage budget CacheConfig::max_bytes is enforced (the storage-budget law).
  bool honours_max_bytes = true;
  uint32_t dtypes = 0x7;        // bit DType: f32 = 1, f16 = 2, bf16 = 4
  bool supports(DType dtype) const { return (dtypes >> static_cast<int>(dtype)) & 1; }
};

// Every registered (built-in) strategy, in a fixed order.
absl::Span<const CacheStrategy> CacheStrategies();

// The strategy called `name`, or nullptr.
const CacheStrategy* FindCacheStrategy(const std::string& name);

}  // namespace kvcheck

#endif  // KVCHECK_SRC_CACHE_REGISTRY_H_
