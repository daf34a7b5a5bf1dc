// File: external_cache.h
// ExternalCache: a cache of an external engine (engine.h) as a KvCache, so that the state
// machines, the growth and storage laws and the generation laws run on it unchanged.
//
// KvCache validates every append before the engine sees it (shapes, dtypes, the shape fixed
// by the first append, inactive rows); the engine's own errors come back with its message.
// AppendUnchecked sends what KvCache would refuse, for the laws that check the engine's own
// refusal. What it shows is asked of the engine
// on every View() (never a stale copy), so buffers shared after a fork show up when either
// side is appended to. Append returns the view the engine's append returned.
//
// Without Reset in the engine (strategy flags), Reset destroys the engine's cache and creates
// a new one with the same configuration: the generation loop resets its caches. Without
// storage statistics, capacity() and counters() report 0 (the strategy says reports_storage
// is false, and no law reads them).
//
// A failure of the engine where KvCache has no error to return (Fork, Reset) leaves the cache
// "broken": every later append or view returns that error, so the property that drove it
// fails with the engine's message at the next check.
#ifndef KVCHECK_SRC_ENGINE_EXTERNAL_CACHE_H_
#define KVCHECK_SRC_ENGINE_EXTERNAL_CACHE_H_

#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "src/cache/kv_cache.h"
#include "src/engine/engine.h"

namespace kvcheck::engine {

class ExternalCache : public KvCache {
 public:
  // A new empty cache of the engine's strategy `strategy` (an index into its info()).
  // Errors: the engine's cache_create error.
  static absl::StatusOr<std::unique_ptr<KvCache>> Create(std::shared_ptr<Engine> engine,
                                                         int strategy, const CacheConfig& config);
  ~ExternalCache() override;

  const char* name() const override;
  std::unique_ptr<KvCache> Fork() const override;
  int64_t capacity() const override;
  bool supports_inactive_rows() const override;
  // The engine's counters, fetched when read (one request) after an operation changed them.
  const CacheCounters& counters() const override;

  // Sends an append straight to the engine, past KvCache's checks: the bad-call laws send
  // calls the contract forbids (another B, KH, D or dtype than the first append since the
  // reset fixed, k and v of different shapes) and expect the engine to refuse them and keep
  // its state. Returns the engine's answer; KvCache's own bookkeeping is not touched, so an
  // append the engine accepts leaves this object out of step with the engine.
  std::optional<absl::Status> AppendUnchecked(const Tensor& k, const Tensor& v) override;

 protected:
  absl::Status DoAppend(const Tensor& k, const Tensor& v, absl::Span<const bool> active) override;
  absl::StatusOr<CacheView> DoView() const override;
  void DoReset() override;

 private:
  ExternalCache(std::shared_ptr<Engine> engine, int strategy, const CacheConfig& config,
                CacheHandle handle)
      : engine_(std::move(engine)), strategy_(strategy), config_(config), handle_(handle) {}
  ExternalCache(const ExternalCache& parent, std::optional<CacheHandle> handle,
                absl::Status broken);
  uint32_t flags() const;
  // Marks counters_ stale: the next counters() asks the engine.
  void RefreshCounters() { counters_stale_ = true; }

  std::shared_ptr<Engine> engine_;
  int strategy_;
  CacheConfig config_;
  std::optional<CacheHandle> handle_;  // none once broken without a cache
  absl::Status broken_;                 // OK unless a Fork or Reset failed in the engine
  // The view the last append returned, handed out once by the DoView call that follows it.
  mutable std::optional<CacheView> appended_view_;
  mutable bool counters_stale_ = true;
  mutable CacheCounters fetched_;  // counters_ with the engine's numbers (when it reports them)
};

}  // namespace kvcheck::engine

#endif  // KVCHECK_SRC_ENGINE_EXTERNAL_CACHE_H_
