#include "src/engine/external_cache.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/engine/kvcheck_engine.h"

namespace kvcheck::engine {

absl::StatusOr<std::unique_ptr<KvCache>> ExternalCache::Create(std::shared_ptr<Engine> engine,
                                                               int strategy,
                                                               const CacheConfig& config) {
  KV_ASSIGN_OR_RETURN(const CacheHandle handle, engine->CreateCache(strategy, config));
  return std::unique_ptr<KvCache>(new ExternalCache(std::move(engine), strategy, config, handle));
}

ExternalCache::ExternalCache(const ExternalCache& parent, std::optional<CacheHandle> handle,
                             absl::Status broken)
    : KvCache(parent),
      engine_(parent.engine_),
      strategy_(parent.strategy_),
      config_(parent.config_),
      handle_(handle),
      broken_(std::move(broken)) {}

ExternalCache::~ExternalCache() {
  if (handle_.has_value()) engine_->Destroy(*handle_);
}

const char* ExternalCache::name() const {
  return engine_->info().strategies[strategy_].name.c_str();
}

uint32_t ExternalCache::flags() const { return engine_->info().strategies[strategy_].flags; }

bool ExternalCache::supports_inactive_rows() const {
  return (flags() & KVCHECK_STRATEGY_PER_ROW) != 0;
}

std::unique_ptr<KvCache> ExternalCache::Fork() const {
  if (!broken_.ok() || !handle_.has_value()) {
    return std::unique_ptr<KvCache>(new ExternalCache(*this, std::nullopt, broken_));
  }
  absl::StatusOr<CacheHandle> fork = engine_->Fork(*handle_);
  if (!fork.ok()) {
    return std::unique_ptr<KvCache>(new ExternalCache(
        *this, std::nullopt, absl::Status(fork.status().code(),
                                          absl::StrCat("this cache is a fork that failed: ",
                                                       fork.status().message()))));
  }
  auto copy = std::unique_ptr<ExternalCache>(new ExternalCache(*this, *fork, absl::OkStatus()));
  copy->RefreshCounters();
  return copy;
}

int64_t ExternalCache::capacity() const {
  if (!handle_.has_value() || (flags() & KVCHECK_STRATEGY_STATS) == 0) return 0;
  absl::StatusOr<CacheStats> stats = engine_->Stats(*handle_);
  return stats.ok() ? stats->capacity : 0;
}

const CacheCounters& ExternalCache::counters() const {
  if (!handle_.has_value() || (flags() & KVCHECK_STRATEGY_STATS) == 0) return counters_;
  if (counters_stale_) {
    absl::StatusOr<CacheStats> stats = engine_->Stats(*handle_);
    fetched_ = stats.ok() ? stats->counters : CacheCounters{};
    counters_stale_ = false;
  }
  // bytes_appended is kvcheck's own count (KvCache::Append keeps it).
  fetched_.bytes_appended = counters_.bytes_appended;
  return fetched_;
}

absl::Status ExternalCache::DoAppend(const Tensor& k, const Tensor& v,
                                     absl::Span<const bool> active) {
  KV_RETURN_IF_ERROR(broken_);
  // Every flag true is every row: an engine whose strategy has one length for all rows gets
  // no flags at all (it need not take them; KvCache::Validate refused any false one).
  if (std::all_of(active.begin(), active.end(), [](bool a) { return a; })) active = {};
  KV_ASSIGN_OR_RETURN(CacheView view, engine_->Append(*handle_, k, v, active));
  appended_view_ = std::move(view);
  RefreshCounters();
  return absl::OkStatus();
}

std::optional<absl::Status> ExternalCache::AppendUnchecked(const Tensor& k, const Tensor& v) {
  if (!broken_.ok()) return broken_;
  appended_view_.reset();
  RefreshCounters();
  return engine_->Append(*handle_, k, v, {}).status();
}

absl::StatusOr<CacheView> ExternalCache::DoView() const {
  KV_RETURN_IF_ERROR(broken_);
  if (appended_view_.has_value()) {
    CacheView view = *std::move(appended_view_);
    appended_view_.reset();
    return view;
  }
  return engine_->View(*handle_, *shape());
}

void ExternalCache::DoReset() {
  appended_view_.reset();
  if (!broken_.ok() || !handle_.has_value()) return;
  if (flags() & KVCHECK_STRATEGY_RESET) {
    broken_ = engine_->Reset(*handle_);
  } else {
    // No Reset in the engine: a new cache of the same configuration is the same thing.
    engine_->Destroy(*handle_);
    handle_.reset();
    absl::StatusOr<CacheHandle> fresh = engine_->CreateCache(strategy_, config_);
    if (fresh.ok()) {
      handle_ = *fresh;
    } else {
      broken_ = fresh.status();
    }
  }
  RefreshCounters();
}

}  // namespace kvcheck::engine
